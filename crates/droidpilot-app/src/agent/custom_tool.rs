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

#[cfg(test)]
mod tests {
    use super::*;

    fn login() -> CustomActionDef {
        serde_json::from_value(json!({
            "name": "login",
            "description": "Sign in.",
            "params": ["user", {"name": "password", "secret": true}],
            "steps": [{"action": "type", "selector": "#user", "text": "${user}"}],
        }))
        .unwrap()
    }

    #[test]
    fn the_tool_lists_each_action_with_its_parameters() {
        let t = tool(&[login()]);
        assert_eq!(t.name, TOOL);
        assert_eq!(
            t.description,
            "Run an app action. login(user, password): Sign in."
        );
        assert_eq!(t.parameters["properties"]["name"]["enum"], json!(["login"]));
    }

    #[test]
    fn a_call_is_the_custom_action_it_names_and_an_unknown_name_is_refused() {
        let mut parser = ActionParser::new();
        register(&mut parser, &[login()]);
        let args = json!({"name": "login", "args": {"user": "ana", "password": "pw"}});
        let Value::Object(args) = args else { panic!() };
        let Action::Custom(c) = to_action(&parser, args).unwrap() else {
            panic!("not a custom action")
        };
        assert_eq!((c.name.as_str(), &c.args["user"]), ("login", &json!("ana")));
        let Value::Object(other) = json!({"name": "logout"}) else {
            panic!()
        };
        let e = to_action(&parser, other).unwrap_err().to_string();
        assert!(e.contains("logout"), "{e}");
    }
}
