//! Custom actions in scripts (`"action": "custom"` steps, `script::custom`): the check at
//! submission against the table in force, and the expansion a Maestro export writes.
//!
//! A script is checked when it is stored (`POST /v1/scripts`, `PUT`), when a task that
//! replays it is submitted, and when that task's agent is built (the table may have
//! been reloaded since). A step naming an action the server does not define, a
//! parameter the action does not declare or one it needs left out is refused, naming
//! the step. A secret parameter's value must be exactly `${input}` of a secret input:
//! a literal would store the secret with the script, and a plain input's value is stored
//! with the task that runs it, so either is refused rather than masked after the fact.
//!
//! A replay runs the definition in force when the step runs, whatever the script was
//! recorded with: a custom action is the operator's abstraction, and an edit to it
//! (an app's sign-in screen changed) is meant to reach every script that names it. The
//! step's outcome records the hash of the definition that ran (`detail.definition`);
//! a recorded step keeps the hash it was recorded with (`custom.definition`).

use serde_json::Value;

use super::{ActionsConfig, CustomActionDef};
use crate::script::custom::whole_variable;
use crate::script::{CustomCall, Script, ScriptError};

/// Checks every `custom` step of `script` against `defs`, the custom actions in force.
/// The actions droidpilot registers on every runner (`run::EVERY_RUNNER`) are known
/// too; their arguments are checked when they run.
pub fn check(script: &Script, defs: &[CustomActionDef]) -> Result<(), ScriptError> {
    for (i, step) in script.steps.iter().enumerate() {
        let Some(call) = &step.custom else { continue };
        if crate::run::EVERY_RUNNER.contains(&call.name.as_str()) {
            continue;
        }
        let at = format!("steps[{i}].custom");
        let def = defs
            .iter()
            .find(|d| d.name == call.name)
            .ok_or_else(|| unknown(&at, i, &call.name, defs))?;
        check_params(script, call, def, &at)?;
    }
    Ok(())
}

fn unknown(at: &str, i: usize, name: &str, defs: &[CustomActionDef]) -> ScriptError {
    let configured: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    ScriptError {
        path: format!("{at}.name"),
        code: "unknown_custom_action",
        message: format!(
            "step {} runs custom action `{name}`, which this server does not define",
            i + 1
        ),
        hint: format!(
            "Custom actions here: {}; droidpilot's own: {}. An operator defines one in [[actions.custom]] (docs/agents.md \"Custom actions and action hooks\") and reloads with SIGHUP.",
            if configured.is_empty() {
                "none".to_string()
            } else {
                configured.join(", ")
            },
            crate::run::EVERY_RUNNER.join(", ")
        ),
    }
}

/// Every declared parameter given, nothing else, each secret one as a secret input.
fn check_params(
    script: &Script,
    call: &CustomCall,
    def: &CustomActionDef,
    at: &str,
) -> Result<(), ScriptError> {
    let hint = format!("`{}` takes {}.", def.name, def.signature());
    if let Some(k) = call
        .params
        .keys()
        .find(|k| def.params.iter().all(|p| &p.name != *k))
    {
        return Err(ScriptError {
            path: format!("{at}.params.{k}"),
            code: "invalid_script",
            message: format!("`{k}` is not a parameter of custom action `{}`", def.name),
            hint,
        });
    }
    for p in &def.params {
        let Some(value) = call.params.get(&p.name) else {
            return Err(ScriptError::invalid(
                format!("{at}.params"),
                format!("custom action `{}` needs `{}`", def.name, p.name),
                &hint,
            ));
        };
        let secret_input = whole_variable(value)
            .and_then(|v| script.inputs.get(v))
            .is_some_and(|i| i.secret);
        if p.secret && !secret_input {
            return Err(ScriptError {
                path: format!("{at}.params.{}", p.name),
                code: "secret_in_script",
                message: format!(
                    "`{}` is a secret parameter of `{}`: a script names a secret input for it (`${{name}}`), never a value or a plain input",
                    p.name, def.name
                ),
                hint: format!(
                    "Declare an input {{\"secret\": true}} in `inputs` and write \"{}\": \"${{that_input}}\"; each run supplies it and nothing stores it.",
                    p.name
                ),
            });
        }
    }
    Ok(())
}

/// The primitives a `custom` step runs under the table `cfg`, its params filled in,
/// for a Maestro export; why not, when the server does not define the action.
pub fn expand(call: &CustomCall, cfg: &ActionsConfig) -> Result<Vec<Value>, String> {
    if crate::run::EVERY_RUNNER.contains(&call.name.as_str()) {
        return Err("droidpilot runs it itself; it has no primitives to write".into());
    }
    let def = cfg
        .custom(&call.name)
        .ok_or_else(|| "this server does not define it".to_string())?;
    Ok(def.expand(&call.params))
}
