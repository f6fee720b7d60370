//! How the `agent` object is read: serde's derive (`deny_unknown_fields` on `AgentSpec`,
//! `ModelSpec` and `PlanningOptions`) through `serde_path_to_error`, so an error knows the
//! field's path (`fast.model`, `agents[1].kind`, `planner.provider`), then worded for the
//! person who wrote the object: an unknown field or value gets "did you mean" from the
//! names serde lists in its message, a wrong type says what the field takes.
//!
//! serde's error is a message, not a value: the unknown-field and unknown-variant cases
//! are recognised by serde's own fixed wording ("unknown field `x`, expected one of
//! `a`, `b`"), whose backquoted names are the type's own list. The `deserialize_with`
//! helpers hold the rules serde's types cannot say (a trimmed, non-empty string; a
//! version from 1; a script id named in its error).

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_path_to_error::Segment;
use strum::VariantNames as _;

use super::replay::OnError;
use super::spec::{AgentKind, SpecError};
use super::vision::VisionFormat;
use crate::domain::action::closest;
use crate::llm::ProviderKind;
use crate::script::ScriptId;

/// Reads `v` as `T`; an error names the field by its path inside the `agent` object.
pub(super) fn read<T: DeserializeOwned>(v: &Value) -> Result<T, SpecError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = field_path(e.path());
        explain(path, &e.inner().to_string())
    })
}

/// `fast.agents[1].kind`: map keys joined with dots, list indexes in brackets.
fn field_path(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// serde's message at `path`, in the agent docs' words.
fn explain(path: String, msg: &str) -> SpecError {
    if let Some((name, known)) = unknown(msg, "unknown field `") {
        let field = if path == name || path.ends_with(&format!(".{name}")) {
            path
        } else if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        let message = format!(
            "unknown field{}; fields: {}",
            did_you_mean(&name, &known),
            known.join(", ")
        );
        return SpecError::new(field, message);
    }
    if let Some((name, known)) = unknown(msg, "unknown variant `") {
        let message = format!(
            "unknown value `{name}`{}; allowed: {}",
            did_you_mean(&name, &known),
            known.join(", ")
        );
        return SpecError::new(path, message);
    }
    let wrong_shape = ["invalid type", "invalid value", "invalid length"]
        .iter()
        .any(|p| msg.starts_with(p));
    let message = expected(relative(&path))
        .filter(|_| wrong_shape)
        .unwrap_or_else(|| msg.to_string());
    SpecError::new(path, message)
}

/// The name serde could not place and the names it knows, from "unknown field `x`,
/// expected one of `a`, `b`" (or "expected `a` or `b`", or "there are no fields").
fn unknown(msg: &str, prefix: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix(prefix)?;
    let (name, known) = match rest.rfind("`, expected ") {
        Some(i) => (&rest[..i], &rest[i + "`, expected ".len()..]),
        None => (rest.split_once("`, there are no")?.0, ""),
    };
    let known = known.split('`').skip(1).step_by(2).map(String::from);
    Some((name.to_string(), known.collect()))
}

fn did_you_mean(name: &str, known: &[String]) -> String {
    closest(name, known.iter().map(String::as_str))
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The path inside the innermost object whose fields share their meaning: nested agent
/// objects (`fast`, `agents[1]`) and role models (`planner`, `verifier`) stripped.
/// The agent object itself is "".
fn relative(path: &str) -> &str {
    let mut rest = path;
    loop {
        if rest == "fast" || (rest.starts_with("agents[") && rest.ends_with(']')) {
            return "";
        }
        if let Some(r) = rest.strip_prefix("fast.") {
            rest = r;
        } else if let Some(i) = rest.find("].").filter(|_| rest.starts_with("agents[")) {
            rest = &rest[i + 2..];
        } else {
            break;
        }
    }
    ["planner.", "verifier."]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest)
}

/// What a field takes, said when a value has the wrong shape.
fn expected(field: &str) -> Option<String> {
    let one_of = |l: &[&str]| format!("expected a string, one of {}", l.join(", "));
    Some(match field {
        "" => "expected an object like {\"kind\": \"navigator\"}".into(),
        "kind" => one_of(AgentKind::VARIANTS),
        "format" => one_of(VisionFormat::VARIANTS),
        "provider" => one_of(ProviderKind::VARIANTS),
        "on_error" => one_of(OnError::VARIANTS),
        "model" | "base_url" | "server" | "script_id" => "expected a string".into(),
        "actions" => "expected a list of actions".into(),
        "script" => "expected a script object".into(),
        "script_version" => "expected a version number (1, 2, …)".into(),
        "inputs" => "expected an object of strings, e.g. {\"name\": \"Ana\"}".into(),
        "recovery" | "vision" => "expected true or false".into(),
        "planner" | "verifier" => {
            "expected a model object like {\"provider\": \"openai\", \"model\": \"gpt-4o\"}".into()
        }
        "agents" => "expected a list of agent objects".into(),
        _ => return None,
    })
}

/// A string field, trimmed; blank is refused.
pub(super) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<String>::deserialize(d)? {
        Some(s) if s.trim().is_empty() => Err(D::Error::custom("must not be empty")),
        s => Ok(s.map(|s| s.trim().to_string())),
    }
}

/// A script version: 1, 2, …
pub(super) fn version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<u32>::deserialize(d)? {
        Some(0) => Err(D::Error::custom("expected a version number (1, 2, …)")),
        v => Ok(v),
    }
}

/// A script id, the bad one named.
pub(super) fn script_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ScriptId>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    s.parse()
        .map(Some)
        .map_err(|_| D::Error::custom(format!("`{s}` is not a script id")))
}

/// The embedded script document: an object (read whole by `Script::from_json`, whose
/// errors name the step and field).
pub(super) fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        Some(v) if !v.is_object() => Err(D::Error::custom("expected a script object")),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_give_the_name_and_the_known_names() {
        let m = "unknown field `modle`, expected one of `kind`, `model`";
        assert_eq!(
            unknown(m, "unknown field `"),
            Some(("modle".into(), vec!["kind".into(), "model".into()]))
        );
        let m = "unknown variant `skip`, expected `fail` or `continue`";
        assert_eq!(
            unknown(m, "unknown variant `"),
            Some(("skip".into(), vec!["fail".into(), "continue".into()]))
        );
        assert_eq!(
            unknown("unknown field `x`, there are no fields", "unknown field `"),
            Some(("x".into(), vec![]))
        );
        assert_eq!(relative("agents[1].fast.planner.model"), "model");
        assert_eq!(relative("agents[1]"), "");
        assert_eq!(relative("inputs.kind"), "inputs.kind");
    }
}
