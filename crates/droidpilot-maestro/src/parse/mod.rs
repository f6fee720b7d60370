//! Flow text → `Flow`, once; what is read is typed (parse, don't validate).
//!
//! The shapes are Maestro's (its `YamlFluentCommand` and the `Yaml*` classes it reads
//! with Jackson): every command of the documented reference, its shorthand forms
//! (`- tapOn: "Text"`, `- launchApp`, `- runFlow: file.yaml`, `- eraseText: 5`), and its
//! fields, unknown ones refused by name as Jackson refuses them. Every error names the
//! line and says what to write. A command Maestro has that cannot work on Android (a
//! `css` selector, a web flow) is refused with `not_on_android`, and one this server
//! cannot run yet with `not_supported`, each with its line and the reason; nothing is
//! dropped or changed silently.

mod commands;
mod fields;
mod selector;

use crate::ast::{EnvVar, Flow, Header};
use crate::error::ParseError;
use crate::yaml::{self, Node, Value};

pub use commands::COMMANDS;
pub(crate) use fields::Fields;
pub use fields::did_you_mean;

/// Reads a flow: an optional header document (`appId`, `name`, `tags`, `env`,
/// `onFlowStart`, `onFlowComplete`, …), `---`, then the list of commands.
pub fn parse_flow(text: &str) -> Result<Flow, ParseError> {
    let docs: Vec<Node> = yaml::load(text)?
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    let (header, commands) = match docs.as_slice() {
        [
            h @ Node {
                value: Value::Map(_),
                ..
            },
            c @ Node {
                value: Value::Seq(_),
                ..
            },
        ] => (Some(h), c),
        [
            c @ Node {
                value: Value::Seq(_),
                ..
            },
        ] => (None, c),
        [
            h @ Node {
                value: Value::Map(_),
                ..
            },
        ] => {
            return Err(ParseError::new(
                h.line,
                "invalid_yaml",
                "the flow has a header but no commands",
                "Put `---` after the header, then the list of commands (`- launchApp`).",
            ));
        }
        [] => {
            return Err(ParseError::new(
                1,
                "invalid_yaml",
                "the flow is empty",
                "Write `appId: com.example`, `---`, then the commands.",
            ));
        }
        [first, ..] => {
            return Err(ParseError::new(
                docs.get(2).map_or(first.line, |d| d.line),
                "invalid_yaml",
                "a flow is a header, `---`, then a list of commands",
                "Write `appId: com.example`, a line `---`, then `- launchApp` and the other commands.",
            ));
        }
    };
    Ok(Flow {
        header: header.map(parse_header).transpose()?.unwrap_or_default(),
        commands: commands::command_list(commands, "the flow")?,
    })
}

const HEADER_KEYS: &[&str] = &[
    "appId",
    "url",
    "name",
    "tags",
    "env",
    "onFlowStart",
    "onFlowComplete",
    "jsEngine",
];

fn parse_header(node: &Node) -> Result<Header, ParseError> {
    let mut h = Header::default();
    for (key, line, value) in node.map().unwrap_or_default() {
        let line = *line;
        match key.as_str() {
            "appId" => h.app_id = Some(header_text(key, line, value)?),
            "url" => {
                let url = header_text(key, line, value)?;
                if url.starts_with("http://") || url.starts_with("https://") {
                    return Err(ParseError::new(
                        line,
                        "not_on_android",
                        "`url` makes this a web flow, which runs in a desktop browser, not on an Android phone",
                        "Give the Android app's package as `appId: com.example`.",
                    ));
                }
                h.app_id = Some(url);
            }
            "name" => h.name = Some(header_text(key, line, value)?),
            "tags" => h.tags = string_list(key, value)?,
            "env" => h.env = env_vars("env", value)?,
            "onFlowStart" => h.on_flow_start = hook(key, value)?,
            "onFlowComplete" => h.on_flow_complete = hook(key, value)?,
            "jsEngine" => h.js_engine = Some(header_text(key, line, value)?),
            other => {
                if let Some(k) = did_you_mean(other, HEADER_KEYS.iter().copied()) {
                    return Err(ParseError::new(
                        line,
                        "unknown_field",
                        format!("header field `{other}` is not one Maestro reads"),
                        format!("Did you mean `{k}`?"),
                    ));
                }
                h.other.push((other.to_string(), line));
            }
        }
    }
    Ok(h)
}

fn header_text(key: &str, line: usize, v: &Node) -> Result<String, ParseError> {
    v.str().map(str::to_string).ok_or_else(|| {
        ParseError::new(
            line,
            "invalid_yaml",
            format!("header field `{key}` takes text, not {}", v.kind()),
            format!("Write `{key}: value`."),
        )
    })
}

/// A list of text, or one text (Maestro's `StringList`).
pub(crate) fn string_list(key: &str, v: &Node) -> Result<Vec<String>, ParseError> {
    match &v.value {
        Value::Null => Ok(Vec::new()),
        Value::Str(s) => Ok(vec![s.clone()]),
        Value::Seq(items) => items
            .iter()
            .map(|i| {
                i.str().map(str::to_string).ok_or_else(|| {
                    ParseError::new(
                        i.line,
                        "invalid_yaml",
                        format!("`{key}` holds text, not {}", i.kind()),
                        format!("Write `{key}:` then `- value` lines."),
                    )
                })
            })
            .collect(),
        Value::Map(_) => Err(ParseError::new(
            v.line,
            "invalid_yaml",
            format!("`{key}` takes a list, not a mapping"),
            format!("Write `{key}:` then `- value` lines."),
        )),
    }
}

/// `env:` — name → text, or null for an input with no default.
pub(crate) fn env_vars(key: &str, v: &Node) -> Result<Vec<EnvVar>, ParseError> {
    if v.is_null() {
        return Ok(Vec::new());
    }
    let kv = v.map().ok_or_else(|| {
        ParseError::new(
            v.line,
            "invalid_yaml",
            format!(
                "`{key}` takes a mapping of names to values, not {}",
                v.kind()
            ),
            format!("Write `{key}:` then `NAME: value` lines."),
        )
    })?;
    kv.iter()
        .map(|(name, line, value)| match &value.value {
            Value::Null => Ok(EnvVar {
                name: name.clone(),
                value: None,
                line: *line,
            }),
            Value::Str(s) => Ok(EnvVar {
                name: name.clone(),
                value: Some(s.clone()),
                line: *line,
            }),
            _ => Err(ParseError::new(
                *line,
                "invalid_yaml",
                format!("`{key}.{name}` takes text, not {}", value.kind()),
                "An env value is text; build objects in a script (`evalScript`).",
            )),
        })
        .collect()
}

/// `onFlowStart:` / `onFlowComplete:` — a command list, or `{commands: [...]}`.
fn hook(key: &str, v: &Node) -> Result<Vec<crate::ast::Command>, ParseError> {
    match &v.value {
        Value::Null => Ok(Vec::new()),
        Value::Map(_) => {
            let f = fields::Fields::new(key, v, &["commands"])?;
            match f.get("commands") {
                Some(c) => commands::command_list(c, key),
                None => Ok(Vec::new()),
            }
        }
        _ => commands::command_list(v, key),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
