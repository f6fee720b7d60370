//! UI-TARS: `Thought: …\nAction: click(point='<point>x y</point>')`. Also the older
//! spellings `start_box='<|box_start|>(x,y)<|box_end|>'` and `start_box='(x1,y1,x2,y2)'`
//! (a box becomes its centre). Coordinates are relative 0–1000 (UI-TARS 1.0) or, for
//! UI-TARS-1.5, pixels of the image after Qwen2.5-VL's `smart_resize`.

use serde_json::{Value, json};

use super::Parsed;
use super::extract::{Scale, call_at, numbers_in};
use crate::agent::parse_error::ParseError;
use crate::domain::ActionParser;

pub const EXPECTED: &str = "Thought: ...\nAction: click(point='<point>x y</point>')";

pub const ACTIONS: &[&str] = &[
    "click",
    "long_press",
    "left_double",
    "type",
    "scroll",
    "open_app",
    "drag",
    "press_home",
    "press_back",
    "press_enter",
    "wait",
    "finished",
    "call_user",
];

/// How UI-TARS coordinates map to the screen.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum UiTarsCoords {
    /// 0–1000 relative (UI-TARS 1.0, UI-TARS-2 papers' mobile setting).
    #[default]
    Relative1000,
    /// Absolute pixels of the screenshot after `smart_resize` (UI-TARS-1.5).
    SmartResize,
}

const FACTOR: f64 = 28.0;
const MIN_PIXELS: f64 = 100.0 * 28.0 * 28.0;
const MAX_PIXELS: f64 = 16384.0 * 28.0 * 28.0;

/// Qwen2.5-VL's `smart_resize`: the size (w, h) the model actually saw.
pub fn smart_resize(width: u32, height: u32) -> (f64, f64) {
    let (w, h) = (width.max(1) as f64, height.max(1) as f64);
    let mut hb = FACTOR.max((h / FACTOR).round() * FACTOR);
    let mut wb = FACTOR.max((w / FACTOR).round() * FACTOR);
    if hb * wb > MAX_PIXELS {
        let beta = (h * w / MAX_PIXELS).sqrt();
        hb = FACTOR.max((h / beta / FACTOR).floor() * FACTOR);
        wb = FACTOR.max((w / beta / FACTOR).floor() * FACTOR);
    } else if hb * wb < MIN_PIXELS {
        let beta = (MIN_PIXELS / (h * w)).sqrt();
        hb = (h * beta / FACTOR).ceil() * FACTOR;
        wb = (w * beta / FACTOR).ceil() * FACTOR;
    }
    (wb, hb)
}

pub fn scale(coords: UiTarsCoords, image: Option<(u32, u32)>) -> Scale {
    match (coords, image) {
        (UiTarsCoords::SmartResize, Some((w, h))) => {
            let (rw, rh) = smart_resize(w, h);
            Scale {
                max_x: rw,
                max_y: rh,
                divisor_x: rw,
                divisor_y: rh,
                range: "the resized screenshot's pixels",
            }
        }
        _ => Scale {
            max_x: 1000.0,
            max_y: 1000.0,
            divisor_x: 1000.0,
            divisor_y: 1000.0,
            range: "0–1000",
        },
    }
}

pub fn parse(text: &str, parser: &ActionParser, scale: &Scale) -> Result<Parsed, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty { expected: EXPECTED });
    }
    let at = text.rfind("Action:").ok_or(ParseError::MissingTag {
        tag: "`Action:`",
        expected: EXPECTED,
    })?;
    let thought = text[..at]
        .rfind("Thought:")
        .map(|t| text[t + "Thought:".len()..at].trim().to_string())
        .unwrap_or_default();
    let call = call_at(text, at + "Action:".len())?;
    let name = call.name.as_str();
    let a = &call.args;
    let point = |keys: &[&'static str]| -> Result<Value, ParseError> {
        let (k, v) = keys.iter().find_map(|k| a.get(*k).map(|v| (*k, v))).ok_or(
            ParseError::MissingField {
                action: name.into(),
                field: keys[0],
                example: Some("point='<point>x y</point>'"),
            },
        )?;
        match v {
            Value::String(s) => scale.point(name, &numbers_in(s)),
            other => scale.point_value(name, k, other),
        }
    };
    let string = |key: &'static str| -> Result<String, ParseError> {
        a.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(ParseError::MissingField {
                action: name.into(),
                field: key,
                example: None,
            })
    };
    const P: &[&str] = &["point", "start_box", "start_point"];
    let canonical = match name {
        "click" | "left_single" | "tap" => json!({"action": "tap", "coordinate": point(P)?}),
        "long_press" => json!({"action": "long_press", "coordinate": point(P)?}),
        "left_double" | "double_click" => json!({"action": "double_tap", "coordinate": point(P)?}),
        // UI-TARS submits with a trailing "\n" in `content`; it is kept so the device
        // presses Enter after typing.
        "type" => json!({"action": "type", "text": string("content")?}),
        "scroll" => {
            let mut v = json!({"action": "scroll", "direction": string("direction")?});
            if P.iter().any(|k| a.contains_key(*k)) {
                v["coordinate"] = point(P)?;
            }
            v
        }
        "open_app" => json!({"action": "launch_app", "label": string("app_name")?}),
        "drag" | "select" => {
            json!({"action": "swipe", "start": point(P)?, "end": point(&["end_point", "end_box"])?})
        }
        "press_home" => json!({"action": "home"}),
        "press_back" => json!({"action": "back"}),
        "press_enter" => json!({"action": "enter"}),
        "hotkey" => json!({"action": "key", "key": string("key")?}),
        "wait" => json!({"action": "wait", "ms": 2000}),
        "finished" => {
            let c = a.get("content").and_then(Value::as_str).unwrap_or("");
            if c.trim().is_empty() {
                json!({"action": "finish", "success": true})
            } else {
                json!({"action": "finish", "success": true, "answer": c})
            }
        }
        "call_user" => {
            json!({"action": "ask_user", "question": a.get("content").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).unwrap_or("I need your help to continue. What should I do?")})
        }
        other => return Err(ParseError::unknown(other, ACTIONS)),
    };
    Ok(Parsed {
        thinking: thought,
        action: parser.parse(&canonical)?,
    })
}

pub fn system_prompt(_mcp_tools: &[crate::agent::McpTool]) -> String {
    // UI-TARS was not trained on tool use; MCP tools are not offered to it.
    include_str!("../../../prompts/ui_tars.v1.md").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{AppRef, SwipePath, TargetField};
    use crate::domain::{Action, Direction, Key, NormPoint, Target};

    fn p(s: &str) -> Result<Parsed, ParseError> {
        parse(
            s,
            &ActionParser::new(),
            &scale(UiTarsCoords::Relative1000, None),
        )
    }
    fn at(x: f64, y: f64) -> TargetField {
        TargetField(Target::Coordinate(NormPoint::new(x, y).unwrap()))
    }

    #[test]
    fn real_format_examples() {
        let table = [
            (
                "Thought: The Settings icon is at the top.\nAction: click(point='<point>500 250</point>')",
                Action::Tap {
                    target: at(0.5, 0.25),
                },
            ),
            (
                "Thought: x\nAction: click(start_box='<|box_start|>(100,200)<|box_end|>')",
                Action::Tap {
                    target: at(0.1, 0.2),
                },
            ),
            (
                "Thought: x\nAction: click(start_box='(100,200,300,400)')",
                Action::Tap {
                    target: at(0.2, 0.3),
                },
            ),
            (
                "Thought: x\nAction: long_press(point='<point>1000 0</point>')",
                Action::LongPress {
                    target: at(1.0, 0.0),
                    duration_ms: None,
                },
            ),
            (
                "Thought: x\nAction: type(content='hello world')",
                Action::Type {
                    text: "hello world".into(),
                    target: None,
                    clear_first: false,
                },
            ),
            (
                "Thought: x\nAction: type(content='it\\'s \"ok\"\\n')",
                Action::Type {
                    text: "it's \"ok\"\n".into(),
                    target: None,
                    clear_first: false,
                },
            ),
            (
                "Thought: x\nAction: scroll(point='<point>500 500</point>', direction='down')",
                Action::Scroll {
                    direction: Direction::Down,
                    container: Some(at(0.5, 0.5)),
                },
            ),
            (
                "Thought: x\nAction: open_app(app_name='Settings')",
                Action::LaunchApp {
                    app: AppRef::Label("Settings".into()),
                },
            ),
            (
                "Thought: x\nAction: drag(start_point='<point>0 0</point>', end_point='<point>1000 1000</point>')",
                Action::Swipe {
                    path: SwipePath::Points {
                        start: NormPoint::new(0.0, 0.0).unwrap(),
                        end: NormPoint::new(1.0, 1.0).unwrap(),
                    },
                    duration_ms: None,
                },
            ),
            (
                "Thought: x\nAction: press_home()",
                Action::Key { key: Key::Home },
            ),
            (
                "Thought: x\nAction: press_back()",
                Action::Key { key: Key::Back },
            ),
            (
                "Thought: Done.\nAction: finished(content='The alarm is set.')",
                Action::Finish {
                    success: true,
                    reason: None,
                    answer: Some("The alarm is set.".into()),
                },
            ),
            ("Thought: x\nAction: wait()", Action::Wait { ms: 2000 }),
        ];
        for (t, want) in table {
            assert_eq!(p(t).unwrap().action, want, "{t}");
        }
        assert_eq!(
            p(table_first()).unwrap().thinking,
            "The Settings icon is at the top."
        );
    }

    fn table_first() -> &'static str {
        "Thought: The Settings icon is at the top.\nAction: click(point='<point>500 250</point>')"
    }

    #[test]
    fn smart_resize_coordinates() {
        // A 1080×2400 phone screenshot is seen by UI-TARS-1.5 as 1092×2408.
        assert_eq!(smart_resize(1080, 2400), (1092.0, 2408.0));
        let s = scale(UiTarsCoords::SmartResize, Some((1080, 2400)));
        let r = parse(
            "Action: click(point='<point>546 1204</point>')",
            &ActionParser::new(),
            &s,
        )
        .unwrap();
        assert_eq!(
            r.action,
            Action::Tap {
                target: at(0.5, 0.5)
            }
        );
    }

    #[test]
    fn malformed_outputs() {
        assert_eq!(p("").unwrap_err().code(), "empty_reply");
        assert_eq!(
            p("Thought: I should click Settings.").unwrap_err().code(),
            "missing_tag"
        );
        let e = p("Thought: x\nAction: clik(point='<point>1 2</point>')").unwrap_err();
        assert!(e.to_string().contains("did you mean `click`"), "{e}");
        let e = p("Thought: x\nAction: click(point='<point>1200 2</point>')").unwrap_err();
        assert_eq!(e.code(), "invalid_coordinate");
        let t = "Thought: x\nAction: click(point='<point>1 2</point>";
        let e = p(t).unwrap_err();
        assert!(e.to_string().contains("unterminated string"), "{e}");
    }
}
