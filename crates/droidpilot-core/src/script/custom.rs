//! A script step that runs one of the operator's custom actions (`[[actions.custom]]`,
//! or one droidpilot registers on every runner, such as `stop_app`):
//!
//! ```json
//! {"action": "custom", "custom": {"name": "sign_in",
//!   "params": {"email": "${email}", "password": "${password}"}},
//!  "expect": {"visible": ["#signed_in"]}}
//! ```
//!
//! The document is checked here as far as the pure layer can: the step carries nothing
//! a custom action does not use (no selector, no `parameters`), every `${var}` is known,
//! and the name is not a built-in action's. Whether the server has the action, whether
//! the params match its declaration and whether every secret parameter names a secret
//! input is checked at submission against the table in force
//! (`droidpilot-app`'s `run::extend::scripts`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::model::{ScriptError, ScriptStep, StepAction, StepParameters};
use super::vars::{self, Vars};
use crate::domain::action::CustomAction;
use crate::domain::{Action, ActionParser};

/// The custom action a step runs, and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomCall {
    /// The custom action's name, as the server's `[[actions.custom]]` defines it.
    pub name: String,
    /// Its parameters' values (may hold `${var}`). A secret parameter's value is exactly
    /// `${input}` of a secret input: the secret itself is never in a script.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// The hash of the action's definition the step was recorded with. A replay runs the
    /// definition in force and records its hash on the step's outcome
    /// (`detail.definition`), so a changed definition shows as two hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl CustomCall {
    /// The action this call runs, with the run's variables substituted.
    pub fn to_action(&self, vars: &Vars) -> Result<Action, ScriptError> {
        let mut args = Map::new();
        for (k, v) in &self.params {
            let v = vars.substitute(v).map_err(|m| ScriptError {
                path: format!("custom.params.{k}"),
                code: "unknown_variable",
                message: m,
                hint: vars::NAME_HINT.into(),
            })?;
            args.insert(k.clone(), Value::String(v));
        }
        Ok(Action::Custom(CustomAction {
            name: self.name.clone(),
            args,
        }))
    }
}

/// The variable a value is made of, when it is exactly one `${name}`.
pub fn whole_variable(value: &str) -> Option<&str> {
    let name = value.strip_prefix("${")?.strip_suffix('}')?;
    vars::check_name(name).ok().map(|_| name)
}

/// Checks the custom side of a step: `custom` is set exactly when the action is
/// `custom`, such a step carries nothing else a target or a built-in action would use,
/// and its params' `${var}`s are known.
pub(super) fn check(step: &ScriptStep, path: &str, known: &[String]) -> Result<(), ScriptError> {
    let Some(call) = &step.custom else {
        if step.action == StepAction::Custom {
            return Err(ScriptError::invalid(
                format!("{path}.custom"),
                "a `custom` step needs `custom`: the action's name and its params",
                "Write {\"action\": \"custom\", \"custom\": {\"name\": \"sign_in\", \"params\": {\"email\": \"${email}\"}}}.",
            ));
        }
        return Ok(());
    };
    if step.action != StepAction::Custom {
        return Err(ScriptError::invalid(
            format!("{path}.custom"),
            format!(
                "`custom` is for steps whose action is `custom`, not `{}`",
                step.action.name()
            ),
            "Set \"action\": \"custom\", or remove `custom`.",
        ));
    }
    refuse_target_fields(step, path)?;
    let mut probe = ActionParser::new();
    probe.register(&call.name).map_err(|m| {
        ScriptError::invalid(
            format!("{path}.custom.name"),
            m,
            "Name a custom action the server defines ([[actions.custom]]); a built-in action is a step of its own.",
        )
    })?;
    for (k, v) in &call.params {
        vars::check_known(&format!("{path}.custom.params.{k}"), v, known)?;
    }
    Ok(())
}

/// What a custom step may not carry: its primitives name their own targets.
fn refuse_target_fields(step: &ScriptStep, path: &str) -> Result<(), ScriptError> {
    let set = [
        ("selector", step.selector.is_some()),
        (
            "alternative_selectors",
            !step.alternative_selectors.is_empty(),
        ),
        ("parameters", step.parameters != StepParameters::default()),
        ("witness", !step.witness.is_empty()),
        ("layout", step.layout.is_some()),
        ("optional", step.optional),
    ];
    match set.iter().find(|(_, on)| *on) {
        Some((field, _)) => Err(ScriptError::invalid(
            format!("{path}.{field}"),
            format!(
                "a `custom` step takes no `{field}`: the custom action's own steps name their targets"
            ),
            "Give the action's values in `custom.params`; use `wait_condition` and `expect` around it.",
        )),
        None => Ok(()),
    }
}
