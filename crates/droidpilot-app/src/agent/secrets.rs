//! Secrets a task holds in memory only: the text of a replay's `type` action marked
//! `"secret": true`, and the values a run gives a script's inputs marked
//! `{"secret": true}`.
//!
//! `take` moves them out of the `agent` object before the task is stored: the stored
//! action keeps `"text": "••••"` and its `secret` mark, a secret input is left out of
//! `inputs`, and the object gets a `secrets_ref` (a random id, worth nothing without this
//! process's memory). `SecretVault` holds the values under that id until the task's agent
//! is built; `restore` puts them back then, and the agent (`Agent::secrets`) tells the
//! runner what to mask in what it records. Nothing writes them anywhere: a restart (or
//! another instance of a cluster taking the task) finds no value, and the task fails
//! asking for it again rather than typing the mask.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::spec::SpecError;
use crate::screen::REDACTED;

/// The `agent` field that names the held secrets; only the server sets it.
pub const REF_FIELD: &str = "secrets_ref";

/// Held values by the field they came from (`actions[3].text`, `inputs.password`).
pub type Held = BTreeMap<String, String>;

/// The values of tasks accepted by this process and not yet started, by `secrets_ref`.
#[derive(Default)]
pub struct SecretVault {
    held: Mutex<HashMap<String, Held>>,
}

impl SecretVault {
    /// Moves `agent`'s secrets into the vault, marking the object with their reference.
    /// Returns whether there were any.
    pub fn hold(&self, agent: &mut Value) -> Result<bool, SpecError> {
        let held = take(agent)?;
        if held.is_empty() {
            return Ok(false);
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        if let Some(obj) = agent.as_object_mut() {
            obj.insert(REF_FIELD.into(), Value::String(id.clone()));
        }
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, held);
        Ok(true)
    }

    /// `agent` (as stored) with its secrets put back, taking them out of the vault (the
    /// agent holds them from then on). A secret the vault does not hold is an error
    /// naming its field.
    pub fn restore(&self, agent: &Value) -> Result<Value, SpecError> {
        let mut agent = agent.clone();
        let held = match agent.as_object_mut().and_then(|o| o.remove(REF_FIELD)) {
            Some(Value::String(id)) => self
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id)
                .unwrap_or_default(),
            _ => Held::new(),
        };
        put_back(&mut agent, &held)?;
        Ok(agent)
    }

    /// Whether this process holds the secrets `reference` names.
    pub fn holds(&self, reference: &str) -> bool {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.contains_key(reference)
    }

    /// How many tasks' secrets are held (for tests).
    pub fn len(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The `secrets_ref` of a stored `agent` object: its secrets are held by the process that
/// accepted it.
pub fn reference(agent: Option<&Value>) -> Option<&str> {
    agent?.get(REF_FIELD)?.as_str()
}

/// The secrets of an `agent` object as a caller wrote it, taken out (masked actions,
/// secret inputs removed). A `secrets_ref` from a caller is refused.
pub fn take(agent: &mut Value) -> Result<Held, SpecError> {
    let mut held = Held::new();
    let Some(obj) = agent.as_object_mut() else {
        return Ok(held);
    };
    if obj.contains_key(REF_FIELD) {
        return Err(SpecError::new(REF_FIELD, "is set by the server; remove it"));
    }
    for (i, action) in secret_actions(obj)? {
        let text = action.get("text").and_then(Value::as_str).unwrap_or("");
        held.insert(format!("actions[{i}].text"), text.to_string());
        action.insert("text".into(), Value::String(REDACTED.into()));
    }
    let secret = secret_inputs(obj);
    if let Some(Value::Object(given)) = obj.get_mut("inputs") {
        for name in secret {
            if let Some(Value::String(v)) = given.remove(&name) {
                held.insert(format!("inputs.{name}"), v);
            }
        }
    }
    Ok(held)
}

/// Puts `held` back into a stored `agent` object; every secret must be there.
fn put_back(agent: &mut Value, held: &Held) -> Result<(), SpecError> {
    let Some(obj) = agent.as_object_mut() else {
        return Ok(());
    };
    for (i, action) in secret_actions(obj)? {
        let field = format!("actions[{i}].text");
        let v = held.get(&field).ok_or_else(|| gone(&field))?;
        action.insert("text".into(), Value::String(v.clone()));
    }
    let secret = secret_inputs(obj);
    if secret.is_empty() {
        return Ok(());
    }
    let given = obj
        .entry("inputs")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(given) = given.as_object_mut() else {
        return Ok(());
    };
    for name in secret {
        let field = format!("inputs.{name}");
        let v = held.get(&field).ok_or_else(|| gone(&field))?;
        given.insert(name, Value::String(v.clone()));
    }
    Ok(())
}

/// A secret that only the memory of the process that accepted the task had.
fn gone(field: &str) -> SpecError {
    SpecError {
        specific_hint: Some(
            "Submit the task again with the secret: droidpilot never stores one, so a task \
             whose server restarted before it started (or that another instance took) \
             cannot get it back."
                .into(),
        ),
        ..SpecError::new(
            field,
            "is a secret held in memory only by the server that accepted the task, and it \
             is gone (the server restarted, or another instance took the task)",
        )
    }
}

/// A replay action by its index in the list.
type Indexed<'a> = (usize, &'a mut Map<String, Value>);

/// The replay actions marked `"secret": true` (only a `type` with a text may be), by
/// index. A mark that is not true or false is refused.
fn secret_actions(obj: &mut Map<String, Value>) -> Result<Vec<Indexed<'_>>, SpecError> {
    let Some(Value::Array(actions)) = obj.get_mut("actions") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, a) in actions.iter_mut().enumerate() {
        let Some(a) = a.as_object_mut() else { continue };
        match a.get("secret") {
            None | Some(Value::Bool(false)) => continue,
            Some(Value::Bool(true)) => {}
            Some(_) => {
                return Err(SpecError::new(
                    format!("actions[{i}].secret"),
                    "expected true or false",
                ));
            }
        }
        let name = a.get("action").or_else(|| a.get("action_type"));
        if name.and_then(Value::as_str) != Some("type")
            || !a.get("text").is_some_and(Value::is_string)
        {
            return Err(SpecError::new(
                format!("actions[{i}].secret"),
                "only a `type` action's `text` can be secret",
            ));
        }
        out.push((i, a));
    }
    Ok(out)
}

/// The inputs the embedded script declares `{"secret": true}`.
fn secret_inputs(obj: &Map<String, Value>) -> Vec<String> {
    let declared = obj
        .get("script")
        .and_then(|s| s.get("inputs"))
        .and_then(Value::as_object);
    declared
        .into_iter()
        .flatten()
        .filter(|(_, d)| d.get("secret") == Some(&Value::Bool(true)))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Masks, in a stored replay `agent` object, the `type` action at `index` if it types
/// `text`, else (the list was not played in order) every `type` of `text`: text that went
/// into a password field. The mask stays unmarked (not a secret to ask for again): the
/// action has run, and a resume carries on after it. Returns whether anything changed.
pub fn mask_typed_action(agent: &mut Value, index: usize, text: &str) -> bool {
    let Some(Value::Array(actions)) = agent.get_mut("actions") else {
        return false;
    };
    let types = |a: &Value| {
        let name = a.get("action").or_else(|| a.get("action_type"));
        name.and_then(Value::as_str) == Some("type")
            && a.get("text").and_then(Value::as_str) == Some(text)
    };
    let hits: Vec<usize> = if actions.get(index).is_some_and(types) {
        vec![index]
    } else {
        (0..actions.len()).filter(|&i| types(&actions[i])).collect()
    };
    for &i in &hits {
        actions[i]["text"] = Value::String(REDACTED.into());
    }
    !hits.is_empty() && text != REDACTED
}

/// The values `agent` (with its secrets in) marks secret: what a run must never record.
pub fn values(agent: &Value) -> Vec<String> {
    let mut agent = agent.clone();
    let mut out: Vec<String> = take(&mut agent)
        .map(|h| h.into_values().collect())
        .unwrap_or_default();
    out.retain(|v| !v.is_empty() && v != REDACTED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_text_leaves_the_stored_spec_and_comes_back_once() {
        let vault = SecretVault::default();
        let mut agent = json!({"kind": "replay", "actions": [
            {"action": "type", "selector": "#email", "text": "a@b.c"},
            {"action": "type", "selector": "#password", "text": "hunter2", "secret": true}]});
        assert!(vault.hold(&mut agent).unwrap());
        assert!(!agent.to_string().contains("hunter2"), "{agent}");
        assert!(vault.holds(reference(Some(&agent)).unwrap()));
        assert_eq!(agent["actions"][1]["text"], REDACTED);
        assert_eq!(agent["actions"][0]["text"], "a@b.c");
        let back = vault.restore(&agent).unwrap();
        assert_eq!(back["actions"][1]["text"], "hunter2");
        assert!(back.get(REF_FIELD).is_none());
        // Taken: a second build (a restart's) finds nothing and says which field.
        let e = vault.restore(&agent).unwrap_err();
        assert_eq!(e.field, "actions[1].text");
        assert!(vault.is_empty());
    }

    #[test]
    fn a_secret_input_leaves_the_inputs() {
        let vault = SecretVault::default();
        let mut agent = json!({"kind": "script",
            "script": {"inputs": {"user": null, "pw": {"secret": true}}},
            "inputs": {"user": "ana", "pw": "hunter2"}});
        assert!(vault.hold(&mut agent).unwrap());
        assert_eq!(agent["inputs"], json!({"user": "ana"}));
        assert_eq!(values(&vault.restore(&agent).unwrap()), vec!["hunter2"]);
    }

    #[test]
    fn marks_are_checked_and_the_reference_is_the_servers() {
        let mut tap = json!({"actions": [{"action": "tap", "selector": "#a", "secret": true}]});
        assert_eq!(take(&mut tap).unwrap_err().field, "actions[0].secret");
        let mut odd = json!({"actions": [{"action": "type", "text": "x", "secret": "yes"}]});
        assert_eq!(take(&mut odd).unwrap_err().field, "actions[0].secret");
        let mut forged = json!({"kind": "replay", "actions": [], REF_FIELD: "abc"});
        assert_eq!(take(&mut forged).unwrap_err().field, REF_FIELD);
        let mut plain = json!({"kind": "replay", "actions": [{"action": "back"}]});
        assert!(!SecretVault::default().hold(&mut plain).unwrap());
        assert!(plain.get(REF_FIELD).is_none());
    }
}
