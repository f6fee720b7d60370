//! MAI-UI (Tongyi-MAI): `<thinking>…</thinking><tool_call>{"name": "mobile_use",
//! "arguments": {"action": "click", "coordinate": [x, y]}}</tool_call>`, coordinates in
//! 0–999 (divided by 999, as MAI-UI's own agent does). A `name` other than
//! `mobile_use` is one of the MCP tools listed in the prompt and becomes `mcp_call`.

use serde_json::{Value, json};

use super::Parsed;
use super::extract::{Scale, json_in, section, thinking};
use crate::agent::parse_error::ParseError;
use crate::domain::ActionParser;

pub const EXPECTED: &str = "<thinking>...</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [x, y]}}</tool_call>";
pub const SCALE: Scale = Scale::thousand(
    999.0,
    "0–999 (0,0 is the top-left corner, 999,999 the bottom-right)",
);

pub const ACTIONS: &[&str] = &[
    "click",
    "long_press",
    "double_click",
    "type",
    "swipe",
    "open",
    "drag",
    "system_button",
    "wait",
    "terminate",
    "answer",
    "ask_user",
];

pub fn parse(
    text: &str,
    parser: &ActionParser,
    mcp_tools: &[String],
) -> Result<Parsed, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty { expected: EXPECTED });
    }
    let sec = section(text, "<tool_call>", "</tool_call>").ok_or(ParseError::MissingTag {
        tag: "<tool_call>",
        expected: EXPECTED,
    })?;
    let call = json_in(&sec)?;
    let name = call
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("mobile_use");
    let args = call
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| call.clone());
    let canonical = if name == "mobile_use" {
        to_canonical(&args)?
    } else if mcp_tools.iter().any(|t| t == name) {
        json!({"action": "mcp_call", "tool": name, "args": args})
    } else {
        let mut allowed = vec!["mobile_use"];
        allowed.extend(mcp_tools.iter().map(String::as_str));
        return Err(ParseError::unknown(name, &allowed));
    };
    Ok(Parsed {
        thinking: thinking(text, "<thinking>", "</thinking>"),
        action: parser.parse(&canonical)?,
    })
}

fn to_canonical(a: &Value) -> Result<Value, ParseError> {
    let action = a
        .get("action")
        .and_then(Value::as_str)
        .ok_or(ParseError::MissingField {
            action: "mobile_use".into(),
            field: "action",
            example: Some("{\"action\": \"click\", \"coordinate\": [500, 300]}"),
        })?;
    let coord = |field: &'static str| -> Result<Value, ParseError> {
        match a.get(field) {
            Some(v) => SCALE.point_value(action, field, v),
            None => Err(ParseError::MissingField {
                action: action.into(),
                field,
                example: Some("[x, y] in 0–999"),
            }),
        }
    };
    let text = |field: &'static str| -> Result<String, ParseError> {
        a.get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(ParseError::MissingField {
                action: action.into(),
                field,
                example: None,
            })
    };
    Ok(match action.to_ascii_lowercase().as_str() {
        "click" => json!({"action": "tap", "coordinate": coord("coordinate")?}),
        "long_press" => json!({"action": "long_press", "coordinate": coord("coordinate")?}),
        "double_click" => json!({"action": "double_tap", "coordinate": coord("coordinate")?}),
        "type" => json!({"action": "type", "text": text("text")?}),
        "swipe" => {
            let mut v = json!({"action": "swipe", "direction": text("direction")?});
            if a.get("coordinate").is_some_and(|c| !c.is_null()) {
                v["coordinate"] = coord("coordinate")?;
            }
            v
        }
        "open" | "awake" => json!({"action": "launch_app", "label": text("text")?}),
        "drag" => {
            json!({"action": "swipe", "start": coord("start_coordinate")?, "end": coord("end_coordinate")?})
        }
        "system_button" => json!({"action": "key", "key": text("button")?}),
        "wait" => json!({"action": "wait", "ms": 2000}),
        "terminate" => {
            let status = a.get("status").and_then(Value::as_str).unwrap_or("success");
            json!({"action": "finish", "status": if status == "fail" { "failure" } else { status }})
        }
        "answer" => json!({"action": "finish", "success": true, "answer": text("text")?}),
        "ask_user" | "info" => json!({"action": "ask_user", "question": text("text")?}),
        _ => return Err(ParseError::unknown(action, ACTIONS)),
    })
}

/// The MAI-UI system prompt (prompts/mai_ui.v1.md), with MCP tools appended when any
/// are registered, in the section MAI-UI was trained on.
pub fn system_prompt(mcp_tools: &[crate::agent::McpTool]) -> String {
    let mut p = include_str!("../../../prompts/mai_ui.v1.md").to_string();
    if !mcp_tools.is_empty() {
        p.push_str("\n## MCP Tools\nYou are also provided with MCP tools, you can use them to complete the task.\n");
        for t in mcp_tools {
            p.push_str(&json!({"name": t.name, "description": t.description, "parameters": t.input_schema}).to_string());
            p.push('\n');
        }
        p.push_str("\nIf you want to use MCP tools, you must output as the following format:\n```\n<thinking>\n...\n</thinking>\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n```\n");
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{AppRef, SwipePath, TargetField};
    use crate::domain::{Action, Direction, Key, NormPoint, Target};

    fn p(s: &str) -> Result<Parsed, ParseError> {
        parse(s, &ActionParser::new(), &["get_weather".to_string()])
    }
    fn tap(x: f64, y: f64) -> Action {
        Action::Tap {
            target: TargetField(Target::Coordinate(NormPoint::new(x, y).unwrap())),
        }
    }

    #[test]
    fn real_format_examples() {
        let table: Vec<(&str, Action)> = vec![
            (
                "<thinking>\nI need to open Settings. The icon is in the second row.\n</thinking>\n<tool_call>\n{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [999, 0]}}\n</tool_call>",
                tap(1.0, 0.0),
            ),
            (
                "<thinking>Type the name.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"type\", \"text\": \"Alice\"}}</tool_call>",
                Action::Type {
                    text: "Alice".into(),
                    target: None,
                    clear_first: false,
                },
            ),
            (
                "<thinking>Scroll.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"swipe\", \"direction\": \"up\"}}</tool_call>",
                Action::Swipe {
                    path: SwipePath::Direction {
                        direction: Direction::Up,
                        target: None,
                    },
                    duration_ms: None,
                },
            ),
            (
                "<thinking>Open the app.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"open\", \"text\": \"Clock\"}}</tool_call>",
                Action::LaunchApp {
                    app: AppRef::Label("Clock".into()),
                },
            ),
            (
                "<thinking>Go back.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"system_button\", \"button\": \"back\"}}</tool_call>",
                Action::Key { key: Key::Back },
            ),
            (
                "<thinking>Done.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"terminate\", \"status\": \"fail\"}}</tool_call>",
                Action::Finish {
                    success: false,
                    reason: None,
                    answer: None,
                },
            ),
            (
                "<thinking>Report.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"answer\", \"text\": \"07:30\"}}</tool_call>",
                Action::Finish {
                    success: true,
                    reason: None,
                    answer: Some("07:30".into()),
                },
            ),
            (
                "<thinking>Which account?</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"ask_user\", \"text\": \"Which account should I use?\"}}</tool_call>",
                Action::AskUser {
                    question: "Which account should I use?".into(),
                    options: None,
                },
            ),
            (
                "<thinking>Use the tool.</thinking><tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
                Action::McpCall {
                    tool: "get_weather".into(),
                    args: json!({"city": "Paris"}),
                },
            ),
            (
                "Sure! Here is my answer.\n<thinking>x</thinking>\n<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"drag\", \"start_coordinate\": [0, 999], \"end_coordinate\": [999, 0]}}</tool_call>\nHope this helps.",
                Action::Swipe {
                    path: SwipePath::Points {
                        start: NormPoint::new(0.0, 1.0).unwrap(),
                        end: NormPoint::new(1.0, 0.0).unwrap(),
                    },
                    duration_ms: None,
                },
            ),
        ];
        for (text, want) in table {
            assert_eq!(p(text).unwrap().action, want, "{text}");
        }
        assert_eq!(
            p("<thinking>\nI need to open Settings.\n</thinking><tool_call>{\"name\":\"mobile_use\",\"arguments\":{\"action\":\"wait\"}}</tool_call>").unwrap().thinking,
            "I need to open Settings."
        );
    }

    #[test]
    fn malformed_outputs_give_clear_errors() {
        let e = p("").unwrap_err();
        assert_eq!(e.code(), "empty_reply");
        let e = p("I will click the settings icon at (500, 300).").unwrap_err();
        assert!(e.to_string().contains("no <tool_call> found"), "{e}");
        let text = "<thinking>x</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [500,";
        let e = p(text).unwrap_err();
        let ParseError::Json { offset, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(*offset >= text.len() - 1, "{e}");
        let e = p("<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"clik\", \"coordinate\": [1, 2]}}</tool_call>").unwrap_err();
        assert!(e.to_string().contains("did you mean `click`?"), "{e}");
        assert!(
            e.to_string().contains("allowed actions: click, long_press"),
            "{e}"
        );
        let e = p("<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [1200, 40]}}</tool_call>").unwrap_err();
        assert_eq!(e.code(), "invalid_coordinate");
        assert!(e.to_string().contains("[1200, 40]"), "{e}");
        let e = p("<tool_call>{\"name\": \"weather\", \"arguments\": {}}</tool_call>").unwrap_err();
        assert!(
            e.to_string()
                .contains("allowed actions: mobile_use, get_weather"),
            "{e}"
        );
        let e = p("<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"system_button\", \"button\": \"volume\"}}</tool_call>").unwrap_err();
        assert!(e.to_string().contains("unknown key `volume`"), "{e}");
    }
}
