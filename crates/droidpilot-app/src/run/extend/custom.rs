//! `[[actions.custom]]`: a named sequence of primitive actions with parameters, defined in
//! the configuration, run as one action by agents (the navigator's `custom_action` tool),
//! REST callers (`POST /v1/devices/{id}/actions`) and scripts of tasks.
//!
//! ```toml
//! [[actions.custom]]
//! name = "login"
//! description = "Sign in with a user name and password."
//! params = ["user", { name = "password", secret = true }]
//! steps = [
//!   { action = "tap", selector = "#username" },
//!   { action = "type", text = "${user}" },
//!   { action = "type", selector = "#password", text = "${password}" },
//!   { action = "tap", selector = ":text(\"Sign in\")" },
//! ]
//! ```
//!
//! Each step is an action in the one JSON shape every caller uses, with `${param}` in
//! its string fields. Parsed at load (`TryFrom<RawCustom>`): every step must parse as a
//! built-in device action once its placeholders are filled, every placeholder must be a
//! declared parameter, and the name must not be a built-in action's or one the runner
//! registers itself. At run time the primitives run in order, each against a fresh read
//! of the screen, through `exec::execute` (so through the runner's coordinate
//! transform); the result lists them, secret parameters' values masked, with the hash
//! of the definition that ran (`definition`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::device::Device;
use crate::device::exec::{self, ExecContext, ExecError};
use crate::domain::{Action, ActionParser, CoordinateTransform};
use crate::screen::{REDACTED, ReprOptions, Screen};

/// Names the runner registers for itself, which a custom action may not take.
pub const RESERVED: &[&str] = &[
    crate::run::scroll_find::NAME,
    crate::run::flow_check::NAME,
    crate::run::app_control::STOP,
    crate::run::app_control::CLEAR,
    crate::run::split_screen::NAME,
];

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamDef {
    pub name: String,
    /// Never logged, stored or exported: masked in the step, its events and results.
    pub secret: bool,
}

/// A custom action as the configuration defines it, checked.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawCustom")]
pub struct CustomActionDef {
    pub name: String,
    pub description: String,
    pub params: Vec<ParamDef>,
    /// The steps as action JSON with `${param}` placeholders; each parses once filled.
    steps: Vec<Value>,
    /// The definition's hash (`definition`): on each result, and kept by a script
    /// recorded from a step that ran it.
    pub hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCustom {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    params: Vec<RawParam>,
    steps: Vec<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawParam {
    Name(String),
    Full(FullParam),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FullParam {
    name: String,
    #[serde(default)]
    secret: bool,
}

impl TryFrom<RawCustom> for CustomActionDef {
    type Error = String;

    fn try_from(raw: RawCustom) -> Result<Self, String> {
        let name = raw.name.trim().to_ascii_lowercase();
        let at = format!("actions.custom `{}`", raw.name);
        ActionParser::new()
            .register(&name)
            .map_err(|e| format!("{at}: {e}"))?;
        if RESERVED.contains(&name.as_str()) {
            return Err(format!(
                "{at}: `{name}` is an action droidpilot defines itself; choose another name"
            ));
        }
        let params = params(&at, raw.params)?;
        if raw.steps.is_empty() {
            return Err(format!("{at}: `steps` is empty; list at least one action"));
        }
        let steps = raw.steps.into_iter().map(Value::Object).collect::<Vec<_>>();
        for (i, step) in steps.iter().enumerate() {
            check_step(step, &params).map_err(|e| format!("{at}, steps[{i}]: {e}"))?;
        }
        let hash = definition_hash(&name, &params, &steps);
        Ok(Self {
            name,
            description: raw.description,
            params,
            steps,
            hash,
        })
    }
}

/// The first 16 hex digits of the SHA-256 of the definition's name, parameters and
/// steps (JSON objects' keys sorted), so an edit to any of them changes it and a
/// reload of the same text does not.
fn definition_hash(name: &str, params: &[ParamDef], steps: &[Value]) -> String {
    use sha2::Digest;
    let params: Vec<Value> = params
        .iter()
        .map(|p| json!({"name": p.name, "secret": p.secret}))
        .collect();
    let doc = json!({"name": name, "params": params, "steps": steps});
    hex::encode(sha2::Sha256::digest(doc.to_string().as_bytes()))[..16].to_string()
}

fn params(at: &str, raw: Vec<RawParam>) -> Result<Vec<ParamDef>, String> {
    let mut out: Vec<ParamDef> = Vec::new();
    for p in raw {
        let p = match p {
            RawParam::Name(name) => ParamDef {
                name,
                secret: false,
            },
            RawParam::Full(f) => ParamDef {
                name: f.name,
                secret: f.secret,
            },
        };
        let ok = !p.name.is_empty()
            && p.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok || p.name == "action" {
            return Err(format!(
                "{at}: parameter `{}` must be letters, digits and `_` (and not `action`)",
                p.name
            ));
        }
        if out.iter().any(|o| o.name == p.name) {
            return Err(format!("{at}: parameter `{}` is declared twice", p.name));
        }
        out.push(p);
    }
    Ok(out)
}

/// A step is a device action once its placeholders are filled, and uses only declared
/// parameters. Placeholders are tried with a few plausible values, so a `${package}` in
/// `launch_app` or a `${url}` in `open_url` passes.
fn check_step(step: &Value, params: &[ParamDef]) -> Result<(), String> {
    let mut used = Vec::new();
    placeholders(step, &mut used);
    if let Some(u) = used.iter().find(|u| params.iter().all(|p| &p.name != *u)) {
        let declared: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "`${{{u}}}` is not a parameter of this action (declared: {}); add it to `params`",
            if declared.is_empty() {
                "none".to_string()
            } else {
                declared.join(", ")
            }
        ));
    }
    let mut last = String::new();
    for sample in ["x", "com.example.app", "https://example.com"] {
        let values = params
            .iter()
            .map(|p| (p.name.clone(), sample.to_string()))
            .collect();
        match parse_primitive(&fill(step, &values)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A filled step as a primitive: a built-in device action.
fn parse_primitive(v: &Value) -> Result<Action, String> {
    let a = ActionParser::new()
        .parse(v)
        .map_err(|e| format!("{} {}", e.caller_message(), e.hint()))?;
    match a {
        Action::Finish { .. } | Action::AskUser { .. } | Action::McpCall { .. } => Err(format!(
            "`{}` belongs to a task, not to a custom action; use device actions (tap, type, swipe, wait_for, …)",
            a.name()
        )),
        a => Ok(a),
    }
}

/// Every `${name}` in `v`'s strings.
fn placeholders(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                let Some(len) = rest[start + 2..].find('}') else {
                    break;
                };
                out.push(rest[start + 2..start + 2 + len].to_string());
                rest = &rest[start + 3 + len..];
            }
        }
        Value::Array(a) => a.iter().for_each(|v| placeholders(v, out)),
        Value::Object(m) => m.values().for_each(|v| placeholders(v, out)),
        _ => {}
    }
}

/// `v` with each `${name}` of `values` replaced by its value, in one pass (a value
/// holding `${…}` is left as it is).
fn fill(v: &Value, values: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) if s.contains("${") => Value::String(fill_str(s, values)),
        Value::Array(a) => Value::Array(a.iter().map(|v| fill(v, values)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), fill(v, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill_str(s: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let tail = &rest[start + 2..];
        match tail
            .find('}')
            .and_then(|end| Some((end, values.get(&tail[..end])?)))
        {
            Some((end, val)) => {
                out.push_str(val);
                rest = &tail[end + 1..];
            }
            None => {
                out.push_str("${");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A call's arguments bound to the parameters.
pub struct Bound {
    values: BTreeMap<String, String>,
    /// The values of secret parameters, to mask wherever they would show.
    pub secrets: Vec<String>,
}

impl CustomActionDef {
    /// Binds `args`: every parameter given (a string, number or boolean), nothing else.
    pub fn bind(&self, args: &Map<String, Value>) -> Result<Bound, String> {
        if let Some(k) = args
            .keys()
            .find(|k| self.params.iter().all(|p| &p.name != *k))
        {
            return Err(format!(
                "`{k}` is not a parameter of custom action `{}`; it takes {}",
                self.name,
                self.signature()
            ));
        }
        let mut values = BTreeMap::new();
        let mut secrets = Vec::new();
        for p in &self.params {
            let v = match args.get(&p.name) {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                _ => {
                    return Err(format!(
                        "custom action `{}` needs `{}` (a string); it takes {}",
                        self.name,
                        p.name,
                        self.signature()
                    ));
                }
            };
            if p.secret && !v.is_empty() {
                secrets.push(v.clone());
            }
            values.insert(p.name.clone(), v);
        }
        Ok(Bound { values, secrets })
    }

    /// The primitives with `values` for the parameters (strings kept as written, so a
    /// script's `${input}` stays a variable): what a Maestro export writes.
    pub fn expand(&self, values: &BTreeMap<String, String>) -> Vec<Value> {
        self.steps.iter().map(|s| fill(s, values)).collect()
    }

    /// `(user, password)` as the errors and the agents' tool describe it.
    pub fn signature(&self) -> String {
        let names: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
        format!("({})", names.join(", "))
    }

    /// The secret parameters' values in `args` (masked in what a step records).
    pub fn secret_values(&self, args: &Map<String, Value>) -> Vec<String> {
        (self.params.iter().filter(|p| p.secret))
            .filter_map(|p| args.get(&p.name).and_then(Value::as_str))
            .filter(|v| !v.is_empty() && *v != REDACTED)
            .map(str::to_string)
            .collect()
    }

    /// `args` with the secret parameters' values as `••••`.
    pub fn masked_args(&self, args: &Map<String, Value>) -> Map<String, Value> {
        let mut out = args.clone();
        for p in self.params.iter().filter(|p| p.secret) {
            if let Some(v) = out.get_mut(&p.name) {
                *v = json!(REDACTED);
            }
        }
        out
    }

    /// Runs the primitives in order, each on a fresh read of the screen. The result lists
    /// each primitive as it ran (secrets masked) with what it did; a failed primitive
    /// fails the action, naming it.
    pub async fn run(
        &self,
        device: &dyn Device,
        args: &Map<String, Value>,
        transform: &dyn CoordinateTransform,
    ) -> Result<Value, Failed> {
        let bound = self.bind(args).map_err(Failed::from)?;
        let size = device
            .info()
            .await
            .map_err(|e| Failed::from(e.to_string()))?
            .screen;
        let opts = ReprOptions {
            screen: Some(size),
            ..Default::default()
        };
        let mut done = Vec::new();
        for (i, template) in self.steps.iter().enumerate() {
            let at = |e: String, cause: Option<ExecError>| Failed {
                message: mask(
                    format!("step {} of `{}`: {e}", i + 1, self.name),
                    &bound.secrets,
                ),
                cause,
            };
            let action =
                parse_primitive(&fill(template, &bound.values)).map_err(|e| at(e, None))?;
            let xml = device
                .hierarchy()
                .await
                .map_err(|e| at(e.to_string(), None))?;
            let screen = Screen::from_xml(&xml, &opts).map_err(|e| at(e.to_string(), None))?;
            let ctx = ExecContext {
                screen: Some(&screen),
                size,
                transform,
            };
            let shown = shown(&screen, &action, size, transform, &bound.secrets);
            let outcome = exec::execute(device, &action, &ctx).await.map_err(|e| {
                let message = format!("`{}` failed: {e}. {}", action.name(), e.hint());
                at(message, Some(e))
            })?;
            done.push(json!({"action": shown, "detail": outcome.detail}));
        }
        Ok(json!({"custom": self.name, "definition": self.hash, "steps": done}))
    }
}

/// Why a custom action failed: the message names the step (secrets masked), and the
/// primitive's own error when one failed on the device (REST answers with its status).
#[derive(Debug)]
pub struct Failed {
    pub message: String,
    pub cause: Option<ExecError>,
}

impl From<String> for Failed {
    fn from(message: String) -> Self {
        Self {
            message,
            cause: None,
        }
    }
}

/// A primitive as recorded: text typed into a password field and every secret value
/// masked.
fn shown(
    screen: &Screen,
    action: &Action,
    size: crate::domain::ScreenSize,
    transform: &dyn CoordinateTransform,
    secrets: &[String],
) -> Value {
    let masked = screen.mask_typed(action, size, transform);
    let v = serde_json::to_value(masked.as_ref().unwrap_or(action)).unwrap_or(Value::Null);
    let text = mask(v.to_string(), secrets);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// `s` with each secret replaced by `••••` (as JSON escapes it too).
pub fn mask(mut s: String, secrets: &[String]) -> String {
    for secret in secrets.iter().filter(|x| !x.is_empty()) {
        s = s.replace(secret.as_str(), REDACTED);
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        if escaped != secret {
            s = s.replace(escaped, REDACTED);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(toml_steps: Value, params: Value) -> Result<CustomActionDef, String> {
        let v = json!({"name": "login", "params": params, "steps": toml_steps});
        serde_json::from_value::<CustomActionDef>(v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_step_that_is_not_a_device_action_is_refused_naming_it() {
        let e = def(json!([{"action": "teleport"}]), json!([])).unwrap_err();
        assert!(e.contains("steps[0]") && e.contains("teleport"), "{e}");
        let e = def(json!([{"action": "finish", "success": true}]), json!([])).unwrap_err();
        assert!(e.contains("belongs to a task"), "{e}");
    }

    #[test]
    fn an_undeclared_placeholder_is_refused_naming_it() {
        let steps = json!([{"action": "type", "text": "${pin}"}]);
        let e = def(steps, json!(["user"])).unwrap_err();
        assert!(
            e.contains("`${pin}`") && e.contains("declared: user"),
            "{e}"
        );
    }

    #[test]
    fn a_built_in_or_reserved_name_is_refused() {
        for name in ["tap", "click", "scroll_to_find", "stop_app"] {
            let v = json!({"name": name, "steps": [{"action": "back"}]});
            let e = serde_json::from_value::<CustomActionDef>(v).unwrap_err();
            assert!(e.to_string().contains(name), "{name}: {e}");
        }
    }

    #[test]
    fn binding_refuses_unknown_and_missing_args_and_collects_secrets() {
        let steps = json!([{"action": "type", "text": "${user}:${password}"}]);
        let d = def(steps, json!(["user", {"name": "password", "secret": true}])).unwrap();
        let args = |v: Value| v.as_object().unwrap().clone();
        let e = d
            .bind(&args(json!({"user": "a", "pasword": "b"})))
            .err()
            .unwrap();
        assert!(
            e.contains("`pasword`") && e.contains("(user, password)"),
            "{e}"
        );
        let e = d.bind(&args(json!({"user": "a"}))).err().unwrap();
        assert!(e.contains("needs `password`"), "{e}");
        let b = d
            .bind(&args(json!({"user": "a", "password": "hunter2"})))
            .unwrap();
        assert_eq!(b.secrets, vec!["hunter2".to_string()]);
        let filled = fill(&d.steps[0], &b.values);
        assert_eq!(filled["text"], "a:hunter2");
        let masked = d.masked_args(&args(json!({"user": "a", "password": "hunter2"})));
        assert_eq!(masked["password"], REDACTED);
    }
}
