//! AutoGLM (Open-AutoGLM phone agent): `<think>…</think><answer>do(action="Tap",
//! element=[x,y])</answer>` or `finish(message="…")`, coordinates 0–999 divided by
//! 1000 as Open-AutoGLM does. `Take_over` and `Interact` hand over to the user
//! (`ask_user`); `Note` and `Call_API` have no device effect and are refused with the
//! list of supported actions.

use serde_json::{Value, json};

use super::Parsed;
use super::extract::{Scale, call_at, section, thinking};
use crate::agent::parse_error::ParseError;
use crate::domain::ActionParser;

pub const EXPECTED: &str = "<think>...</think><answer>do(action=\"Tap\", element=[x,y])</answer>";
pub const SCALE: Scale = Scale::thousand(
    1000.0,
    "0–999 (0,0 is the top-left corner, 999,999 the bottom-right)",
);

pub const ACTIONS: &[&str] = &[
    "Launch",
    "Tap",
    "Type",
    "Type_Name",
    "Swipe",
    "Long Press",
    "Double Tap",
    "Back",
    "Home",
    "Wait",
    "Take_over",
    "Interact",
    "finish",
];

pub fn parse(text: &str, parser: &ActionParser) -> Result<Parsed, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty { expected: EXPECTED });
    }
    // Open-AutoGLM itself falls back to the bare call when the <answer> tag is missing.
    let (body, base) = match section(text, "<answer>", "</answer>") {
        Some(s) => (s.text, s.offset),
        None => (text, 0),
    };
    let start = ["do(", "finish("]
        .iter()
        .filter_map(|m| body.find(m))
        .min()
        .ok_or(ParseError::MissingTag {
            tag: "<answer>do(...)</answer>",
            expected: EXPECTED,
        })?;
    let call = call_at(text, base + start)?;
    let a = &call.args;
    let canonical = if call.name == "finish" {
        let m = a.get("message").and_then(Value::as_str).unwrap_or("");
        json!({"action": "finish", "success": true, "answer": if m.is_empty() { Value::Null } else { json!(m) }})
    } else {
        let action = a
            .get("action")
            .and_then(Value::as_str)
            .ok_or(ParseError::MissingField {
                action: "do".into(),
                field: "action",
                example: Some("do(action=\"Tap\", element=[500, 300])"),
            })?;
        let point = |k: &'static str| -> Result<Value, ParseError> {
            let v = a.get(k).ok_or(ParseError::MissingField {
                action: action.into(),
                field: k,
                example: Some("[x, y] in 0–999"),
            })?;
            SCALE.point_value(action, k, v)
        };
        let string = |k: &'static str| -> Result<String, ParseError> {
            a.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(ParseError::MissingField {
                    action: action.into(),
                    field: k,
                    example: None,
                })
        };
        match action {
            "Launch" => json!({"action": "launch_app", "label": string("app")?}),
            "Tap" => json!({"action": "tap", "coordinate": point("element")?}),
            "Long Press" => json!({"action": "long_press", "coordinate": point("element")?}),
            "Double Tap" => json!({"action": "double_tap", "coordinate": point("element")?}),
            "Type" | "Type_Name" => json!({"action": "type", "text": string("text")?}),
            "Swipe" => json!({"action": "swipe", "start": point("start")?, "end": point("end")?}),
            "Back" => json!({"action": "back"}),
            "Home" => json!({"action": "home"}),
            "Wait" => {
                let secs = a
                    .get("duration")
                    .map(|d| match d {
                        Value::String(s) => super::extract::numbers_in(s).first().copied(),
                        other => other.as_f64(),
                    })
                    .unwrap_or(Some(1.0))
                    .unwrap_or(1.0);
                json!({"action": "wait", "ms": (secs.clamp(0.0, 120.0) * 1000.0).round() as u64})
            }
            "Take_over" => json!({"action": "ask_user", "question": string("message")?}),
            "Interact" => {
                json!({"action": "ask_user", "question": a.get("message").and_then(Value::as_str).unwrap_or("Several options match; which one should I choose?")})
            }
            other => return Err(ParseError::unknown(other, ACTIONS)),
        }
    };
    Ok(Parsed {
        thinking: thinking(text, "<think>", "</think>"),
        action: parser.parse(&canonical)?,
    })
}

pub fn system_prompt(_mcp_tools: &[crate::agent::McpTool]) -> String {
    include_str!("../../../prompts/autoglm.v1.md").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{AppRef, SwipePath, TargetField};
    use crate::domain::{Action, Key, NormPoint, Target};

    fn p(s: &str) -> Result<Parsed, ParseError> {
        parse(s, &ActionParser::new())
    }
    fn at(x: f64, y: f64) -> TargetField {
        TargetField(Target::Coordinate(NormPoint::new(x, y).unwrap()))
    }

    #[test]
    fn real_format_examples() {
        let table = [
            (
                "<think>打开设置</think><answer>do(action=\"Launch\", app=\"Settings\")</answer>",
                Action::LaunchApp {
                    app: AppRef::Label("Settings".into()),
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Tap\", element=[500,250])</answer>",
                Action::Tap {
                    target: at(0.5, 0.25),
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Tap\", element=[500,250], message=\"重要操作\")</answer>",
                Action::Tap {
                    target: at(0.5, 0.25),
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Type\", text=\"hello\")</answer>",
                Action::Type {
                    text: "hello".into(),
                    target: None,
                    clear_first: false,
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Swipe\", start=[500,800], end=[500,200])</answer>",
                Action::Swipe {
                    path: SwipePath::Points {
                        start: NormPoint::new(0.5, 0.8).unwrap(),
                        end: NormPoint::new(0.5, 0.2).unwrap(),
                    },
                    duration_ms: None,
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Long Press\", element=[100,100])</answer>",
                Action::LongPress {
                    target: at(0.1, 0.1),
                    duration_ms: None,
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Double Tap\", element=[100,100])</answer>",
                Action::DoubleTap {
                    target: at(0.1, 0.1),
                },
            ),
            (
                "<think>x</think><answer>do(action=\"Back\")</answer>",
                Action::Key { key: Key::Back },
            ),
            (
                "<think>x</think><answer>do(action=\"Home\")</answer>",
                Action::Key { key: Key::Home },
            ),
            (
                "<think>x</think><answer>do(action=\"Wait\", duration=\"2 seconds\")</answer>",
                Action::Wait { ms: 2000 },
            ),
            (
                "<think>x</think><answer>do(action=\"Take_over\", message=\"请登录\")</answer>",
                Action::AskUser {
                    question: "请登录".into(),
                    options: None,
                },
            ),
            (
                "<think>done</think><answer>finish(message=\"Alarm set for 07:30\")</answer>",
                Action::Finish {
                    success: true,
                    reason: None,
                    answer: Some("Alarm set for 07:30".into()),
                },
            ),
            (
                "<think>no tag</think>do(action=\"Back\")",
                Action::Key { key: Key::Back },
            ),
        ];
        for (t, want) in table {
            assert_eq!(p(t).unwrap().action, want, "{t}");
        }
        assert_eq!(
            p("<think>打开设置</think><answer>do(action=\"Back\")</answer>")
                .unwrap()
                .thinking,
            "打开设置"
        );
    }

    #[test]
    fn malformed_outputs() {
        assert_eq!(p("").unwrap_err().code(), "empty_reply");
        assert_eq!(
            p("<think>I will tap</think>").unwrap_err().code(),
            "missing_tag"
        );
        let e = p("<answer>do(action=\"Tapp\", element=[1,2])</answer>").unwrap_err();
        assert!(e.to_string().contains("did you mean `Tap`"), "{e}");
        let e = p("<answer>do(action=\"Note\", message=\"True\")</answer>").unwrap_err();
        assert!(
            e.to_string().contains("allowed actions: Launch, Tap"),
            "{e}"
        );
        let e = p("<answer>do(action=\"Tap\", element=[1000,20])</answer>").unwrap_err();
        assert_eq!(e.code(), "invalid_coordinate");
        let e = p("<answer>do(action=\"Tap\", element=[500,").unwrap_err();
        assert_eq!(e.code(), "malformed_action");
    }
}
