//! The navigator's `custom_action` tool: the operator's custom actions
//! (`[[actions.custom]]`, `run::extend::custom`) offered to the model as one tool, only
//! when there are any, so a server without them sends the same tools as before.

use serde_json::{Map, Value, json};

use crate::domain::{Action, ActionParser};
use crate::llm::ToolSpec;
use crate::run::extend::CustomActionDef;

use super::parse_error::ParseError;

/// The tool's name.
pub const TOOL: &str = "custom_action";

/// The tool: `name` one of the actions (each listed with its parameters and what it
/// does), `args` their values.
pub fn tool(defs: &[CustomActionDef]) -> ToolSpec {
    let listed: Vec<String> = defs
        .iter()
        .map(|d| match d.description.trim() {
            "" => format!("{}{}", d.name, d.signature()),
            what => format!("{}{}: {what}", d.name, d.signature()),
        })
        .collect();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    ToolSpec {
        name: TOOL.into(),
        description: format!("Run an app action. {}", listed.join("; ")),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names},
                "args": {"type": "object"},
            },
            "required": ["name"],
        }),
    }
}

/// Registers the actions' names with `parser`.
pub fn register(parser: &mut ActionParser, defs: &[CustomActionDef]) {
    for d in defs {
        // Checked when the configuration loaded.
        let _ = parser.register(&d.name);
    }
}

/// A call of the tool as the custom action it names.
pub fn to_action(
    parser: &ActionParser,
    mut args: Map<String, Value>,
) -> Result<Action, ParseError> {
    let name = args.remove("name").unwrap_or(Value::Null);
    let mut action = match args.remove("args") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    action.insert("action".into(), name);
    Ok(parser.parse(&Value::Object(action))?)
}
