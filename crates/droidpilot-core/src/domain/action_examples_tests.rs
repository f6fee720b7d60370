//! Every action example written in the seeds (000, 001, 003, 004) and in README.md, fed
//! to the parser as written: accepted with the meaning the document gives it, or refused
//! with the error a reader should expect. A comment on each row names its source. When
//! a document gains an example, it gains a row here.

use serde_json::{Value, json};

use super::*;

fn pt(x: f64, y: f64) -> NormPoint {
    NormPoint::new(x, y).unwrap()
}

fn tap(t: Target) -> Action {
    Action::Tap {
        target: TargetField(t),
    }
}

fn sel(s: &str) -> Target {
    Target::Selector(s.into())
}

fn key(k: Key) -> Action {
    Action::Key { key: k }
}

/// What the parser should make of an example.
enum Want {
    Is(Action),
    /// Refused: the error code and a part of the message.
    Refused(&'static str, &'static str),
}
use Want::{Is, Refused};

fn table() -> Vec<(&'static str, Value, Want)> {
    vec![
        // --- seed 000, "Coordinate Transformation": transform normalized tap coordinate;
        //     and "Action Parsing and Validation": validate action type.
        (
            "000 coordinate transformation / validate action type",
            json!({"action": "tap", "coordinate": [0.5, 0.3]}),
            Is(tap(Target::Coordinate(pt(0.5, 0.3)))),
        ),
        // seed 000, "Coordinate Transformation": transform swipe coordinates.
        (
            "000 transform swipe coordinates",
            json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2]}),
            Is(Action::Swipe {
                path: SwipePath::Points {
                    start: pt(0.5, 0.8),
                    end: pt(0.5, 0.2),
                },
                duration_ms: None,
            }),
        ),
        // seed 000, "Coordinate Transformation": handle edge coordinates [1.0, 1.0].
        (
            "000 handle edge coordinates",
            json!({"action": "tap", "coordinate": [1.0, 1.0]}),
            Is(tap(Target::Coordinate(pt(1.0, 1.0)))),
        ),
        // seed 000, "Error Mapping": map coordinate out of bounds.
        (
            "000 map coordinate out of bounds",
            json!({"action": "tap", "coordinate": [1.2, 0.5]}),
            Refused(
                "invalid_coordinate",
                "Agent predicted invalid coordinate: [1.2, 0.5]. Coordinates must be in [0, 1]",
            ),
        ),
        // seed 000, "Action Parsing and Validation": validate action parameters (tap needs
        // a coordinate, swipe needs start and end, type needs text).
        (
            "000 validate parameters: tap",
            json!({"action": "tap"}),
            Refused("invalid_action", "`tap` needs field `coordinate`"),
        ),
        (
            "000 validate parameters: swipe",
            json!({"action": "swipe", "start": [0.5, 0.8]}),
            Refused("invalid_action", "`swipe` needs field `end`"),
        ),
        (
            "000 validate parameters: swipe duration",
            json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2], "duration": -1}),
            Refused("invalid_action", "`swipe` field `duration` is invalid"),
        ),
        (
            "000 validate parameters: type",
            json!({"action": "type"}),
            Refused("invalid_action", "`type` needs field `text`"),
        ),
        // seed 000, "Validate action type": an unknown type is refused with a suggestion.
        (
            "000 unknown action type",
            json!({"action": "tapp", "coordinate": [0.5, 0.3]}),
            Refused("unknown_action", "(did you mean `tap`?)"),
        ),
        // seed 000, "Validate action type": the allowed list [tap, swipe, type, back,
        // home, recent, long_press, FINISH, ask_user, mcp_call], each with its fields.
        (
            "000 allowed list: type",
            json!({"action": "type", "text": "hi"}),
            Is(Action::Type {
                text: "hi".into(),
                target: None,
                clear_first: false,
            }),
        ),
        (
            "000 allowed list: back",
            json!({"action": "back"}),
            Is(key(Key::Back)),
        ),
        (
            "000 allowed list: home",
            json!({"action": "home"}),
            Is(key(Key::Home)),
        ),
        (
            "000 allowed list: recent",
            json!({"action": "recent"}),
            Is(key(Key::Recents)),
        ),
        (
            "000 allowed list: long_press",
            json!({"action": "long_press", "coordinate": [0.5, 0.5]}),
            Is(Action::LongPress {
                target: TargetField(Target::Coordinate(pt(0.5, 0.5))),
                duration_ms: None,
            }),
        ),
        // seed 000 allowed list, and seed 003 "Autonomous Execution Loop": continues until
        // the agent outputs {"action": "FINISH"}.
        (
            "000 allowed list / 003 execute multi-step task: FINISH",
            json!({"action": "FINISH"}),
            Is(Action::Finish {
                success: true,
                reason: None,
                answer: None,
            }),
        ),
        // seed 000, "Extensibility": register custom action "custom_tap" (registered by
        // the test below; the plain parser refuses it).
        (
            "000 register custom action (unregistered)",
            json!({"action": "custom_tap"}),
            Refused("unknown_action", "unknown action `custom_tap`"),
        ),
        // --- seed 001, "Tool/Function Calling": complete tool definition, each tool as an
        //     action object.
        (
            "001 tap(selector)",
            json!({"action": "tap", "selector": "#btn_continue"}),
            Is(tap(sel("#btn_continue"))),
        ),
        (
            "001 long_press(selector)",
            json!({"action": "long_press", "selector": ":text(\"Continue\")"}),
            Is(Action::LongPress {
                target: TargetField(sel(":text(\"Continue\")")),
                duration_ms: None,
            }),
        ),
        (
            "001 type(selector, text)",
            json!({"action": "type", "selector": "#input_email", "text": "a@b.org"}),
            Is(Action::Type {
                text: "a@b.org".into(),
                target: Some(TargetField(sel("#input_email"))),
                clear_first: false,
            }),
        ),
        (
            "001 clear(selector)",
            json!({"action": "clear", "selector": "#input_email"}),
            Is(Action::Clear {
                target: Some(TargetField(sel("#input_email"))),
            }),
        ),
        (
            "001 scroll(direction, selector?)",
            json!({"action": "scroll", "direction": "up", "selector": "#list"}),
            Is(Action::Scroll {
                direction: Direction::Up,
                container: Some(TargetField(sel("#list"))),
            }),
        ),
        (
            "001 wait_for(selector, timeout_ms?)",
            json!({"action": "wait_for", "selector": "#done", "timeout_ms": 5000}),
            Is(Action::WaitFor {
                selector: "#done".into(),
                timeout_ms: 5000,
                idle_ms: None,
            }),
        ),
        (
            "001 wait_for_gone(selector, timeout_ms?)",
            json!({"action": "wait_for_gone", "selector": "#spinner"}),
            Is(Action::WaitForGone {
                selector: "#spinner".into(),
                timeout_ms: DEFAULT_WAIT_FOR_MS,
                idle_ms: None,
            }),
        ),
        (
            "001 launch_app(package)",
            json!({"action": "launch_app", "package": "com.example.app"}),
            Is(Action::LaunchApp {
                app: AppRef::Package("com.example.app".into()),
            }),
        ),
        ("001 back()", json!({"action": "back"}), Is(key(Key::Back))),
        ("001 home()", json!({"action": "home"}), Is(key(Key::Home))),
        // seed 001 tools that are not device actions: the navigator answers read_element
        // and read_screen itself and registers scroll_to_find; record_step is not built.
        (
            "001 scroll_to_find (navigator-registered)",
            json!({"action": "scroll_to_find", "selector": "#row_42", "direction": "down"}),
            Refused("unknown_action", "unknown action `scroll_to_find`"),
        ),
        (
            "001 read_screen (navigator tool)",
            json!({"action": "read_screen"}),
            Refused("unknown_action", "unknown action `read_screen`"),
        ),
        (
            "001 record_step (not built)",
            json!({"action": "record_step"}),
            Refused("unknown_action", "unknown action `record_step`"),
        ),
        // --- seed 003, "Autonomous Execution Loop": terminate on FINISH action.
        (
            "003 terminate on FINISH",
            json!({"action": "FINISH", "reason": "Task completed successfully"}),
            Is(Action::Finish {
                success: true,
                reason: Some("Task completed successfully".into()),
                answer: None,
            }),
        ),
        // seed 003, "Action Dispatch and Execution": tap, swipe, type, navigation.
        (
            "003 execute tap action",
            json!({"action": "tap", "coordinate": [0.5, 0.3]}),
            Is(tap(Target::Coordinate(pt(0.5, 0.3)))),
        ),
        (
            "003 execute swipe action",
            json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2], "duration": 300}),
            Is(Action::Swipe {
                path: SwipePath::Points {
                    start: pt(0.5, 0.8),
                    end: pt(0.5, 0.2),
                },
                duration_ms: Some(300),
            }),
        ),
        (
            "003 execute type action",
            json!({"action": "type", "text": "search query"}),
            Is(Action::Type {
                text: "search query".into(),
                target: None,
                clear_first: false,
            }),
        ),
        (
            "003 navigation: back",
            json!({"action": "back"}),
            Is(key(Key::Back)),
        ),
        (
            "003 navigation: home",
            json!({"action": "home"}),
            Is(key(Key::Home)),
        ),
        (
            "003 navigation: recent",
            json!({"action": "recent"}),
            Is(key(Key::Recents)),
        ),
        // seed 003, "Tool Call Routing": ask_user and mcp_call.
        (
            "003 handle ask_user",
            json!({"action": "ask_user", "question": "Which option do you prefer?"}),
            Is(Action::AskUser {
                question: "Which option do you prefer?".into(),
                options: None,
            }),
        ),
        (
            "003 handle mcp_call",
            json!({"action": "mcp_call", "tool": "amap_search", "args": {"query": "coffee shop"}}),
            Is(Action::McpCall {
                tool: "amap_search".into(),
                args: json!({"query": "coffee shop"}),
            }),
        ),
        // seed 003, "Action Dispatch": invalid action handling lists the allowed types.
        (
            "003 invalid action handling",
            json!({"action": "teleport"}),
            Refused("unknown_action", "allowed actions: tap, long_press"),
        ),
        // --- seed 004, "The 5 Primitives", verbatim.
        (
            "004 1. CLICK",
            json!({"action": "click", "element_id": 1}),
            Is(tap(Target::Element(1))),
        ),
        (
            "004 2. TYPE",
            json!({"action": "type", "element_id": 2, "text": "hello@gmail.com"}),
            Is(Action::Type {
                text: "hello@gmail.com".into(),
                target: Some(TargetField(Target::Element(2))),
                clear_first: false,
            }),
        ),
        (
            "004 3. SCROLL",
            json!({"action": "scroll", "direction": "down"}),
            Is(Action::Scroll {
                direction: Direction::Down,
                container: None,
            }),
        ),
        (
            "004 3. SCROLL (or up)",
            json!({"action": "scroll", "direction": "up"}),
            Is(Action::Scroll {
                direction: Direction::Up,
                container: None,
            }),
        ),
        (
            "004 3. SCROLL (or left)",
            json!({"action": "scroll", "direction": "left"}),
            Is(Action::Scroll {
                direction: Direction::Left,
                container: None,
            }),
        ),
        (
            "004 3. SCROLL (or right)",
            json!({"action": "scroll", "direction": "right"}),
            Is(Action::Scroll {
                direction: Direction::Right,
                container: None,
            }),
        ),
        (
            "004 4. WAIT",
            json!({"action": "wait", "duration": 500}),
            Is(Action::Wait { ms: 500 }),
        ),
        (
            "004 5. GLOBAL ACTION",
            json!({"action": "global_action", "global_action": "BACK"}),
            Is(key(Key::Back)),
        ),
        (
            "004 5. GLOBAL ACTION (or HOME)",
            json!({"action": "global_action", "global_action": "HOME"}),
            Is(key(Key::Home)),
        ),
        (
            "004 5. GLOBAL ACTION (or RECENTS)",
            json!({"action": "global_action", "global_action": "RECENTS"}),
            Is(key(Key::Recents)),
        ),
        (
            "004 5. GLOBAL ACTION (or POWER)",
            json!({"action": "global_action", "global_action": "POWER"}),
            Is(key(Key::Power)),
        ),
        // seed 004, "LLM Interaction Flow", step 4: the parsed response.
        (
            "004 LLM interaction flow: parse JSON response",
            json!({"action": "click", "element_id": 0}),
            Is(tap(Target::Element(0))),
        ),
        // seed 004, "Quick Start Commands" and the `UIAction` cheat sheet: the tag is
        // `action_type` there, taken as a synonym of `action`.
        (
            "004 quick start: execute action (phone app's format)",
            json!({"action_type": "click", "element_id": 0}),
            Is(tap(Target::Element(0))),
        ),
        (
            "004 UIAction: type",
            json!({"action_type": "type", "element_id": 2, "text": "text here"}),
            Is(Action::Type {
                text: "text here".into(),
                target: Some(TargetField(Target::Element(2))),
                clear_first: false,
            }),
        ),
        (
            "004 UIAction: scroll",
            json!({"action_type": "scroll", "direction": "down"}),
            Is(Action::Scroll {
                direction: Direction::Down,
                container: None,
            }),
        ),
        (
            "004 UIAction: wait",
            json!({"action_type": "wait", "duration": 500}),
            Is(Action::Wait { ms: 500 }),
        ),
        (
            "004 UIAction: global_action",
            json!({"action_type": "global_action", "global_action": "BACK"}),
            Is(key(Key::Back)),
        ),
        (
            "004 UIAction: both tags, agreeing",
            json!({"action": "click", "action_type": "click", "element_id": 0}),
            Is(tap(Target::Element(0))),
        ),
        (
            "004 UIAction: both tags, disagreeing",
            json!({"action": "click", "action_type": "scroll", "element_id": 0}),
            Refused(
                "invalid_action",
                "`action` says `click` and `action_type` says `scroll`; give one of them",
            ),
        ),
        // --- README.md, "Quick start": the replay agent's list.
        (
            "README quick start: replay",
            json!({"action": "launch_app", "label": "Settings"}),
            Is(Action::LaunchApp {
                app: AppRef::Label("Settings".into()),
            }),
        ),
        (
            "README quick start: replay",
            json!({"action": "wait_for", "selector": ":text(\"Bluetooth\")"}),
            Is(Action::WaitFor {
                selector: ":text(\"Bluetooth\")".into(),
                timeout_ms: 10000,
                idle_ms: None,
            }),
        ),
        // README.md, "Agents and models": the generic format's tool call.
        (
            "README agents and models: generic format",
            json!({"action": "tap", "coordinate": [0.5, 0.3]}),
            Is(tap(Target::Coordinate(pt(0.5, 0.3)))),
        ),
        // README.md, "Actions": the key shorthand.
        (
            "README actions: key shorthand",
            json!({"action": "back"}),
            Is(key(Key::Back)),
        ),
        // README.md, "Actions": a wait that gives up once the screen holds still.
        (
            "README actions: wait_for with idle_ms",
            json!({"action": "wait_for", "selector": "#results", "timeout_ms": 5000, "idle_ms": 1000}),
            Is(Action::WaitFor {
                selector: "#results".into(),
                timeout_ms: 5000,
                idle_ms: Some(1000),
            }),
        ),
        // README.md, "Actions": an unknown field is refused by name.
        (
            "README actions: unknown field",
            json!({"action": "tap", "element": 3, "bogus": 1}),
            Refused(
                "invalid_action",
                "`tap` has unknown field `bogus`; `tap` takes: coordinate, pixel, element, element_id, selector",
            ),
        ),
        // README.md, "Actions": AURA's primitives (same as seed 004 above).
        (
            "README actions: AURA click",
            json!({"action": "click", "element_id": 1}),
            Is(tap(Target::Element(1))),
        ),
        (
            "README actions: AURA type",
            json!({"action": "type", "element_id": 2, "text": "hello@gmail.com"}),
            Is(Action::Type {
                text: "hello@gmail.com".into(),
                target: Some(TargetField(Target::Element(2))),
                clear_first: false,
            }),
        ),
        (
            "README actions: AURA scroll",
            json!({"action": "scroll", "direction": "down"}),
            Is(Action::Scroll {
                direction: Direction::Down,
                container: None,
            }),
        ),
        (
            "README actions: AURA wait",
            json!({"action": "wait", "duration": 500}),
            Is(Action::Wait { ms: 500 }),
        ),
        (
            "README actions: AURA global_action",
            json!({"action": "global_action", "global_action": "BACK"}),
            Is(key(Key::Back)),
        ),
        // README.md, "Acting on a device by hand": pixels from a screenshot.
        (
            "README acting by hand: pixel",
            json!({"action": "tap", "pixel": [540, 1200]}),
            Is(tap(Target::Pixel([540, 1200]))),
        ),
        // Outside a 1080×2400 screen, but the parser does not know the screen: the
        // executor refuses it (tests/api/actions.rs).
        (
            "README acting by hand: pixel outside the screen",
            json!({"action": "tap", "pixel": [1080, 600]}),
            Is(tap(Target::Pixel([1080, 600]))),
        ),
        (
            "README acting by hand: pixels sent as coordinate",
            json!({"action": "tap", "coordinate": [540, 1200]}),
            Refused("invalid_coordinate", "[540, 1200]"),
        ),
    ]
}

#[test]
fn every_documented_example_parses_as_the_document_says() {
    let parser = ActionParser::new();
    for (source, input, want) in table() {
        let got = parser.parse(&input);
        match (want, got) {
            (Is(a), Ok(b)) => assert_eq!(a, b, "{source}: {input}"),
            (Refused(code, msg), Err(e)) => {
                assert_eq!(e.code(), code, "{source}: {input} → {e}");
                assert!(
                    e.to_string().contains(msg),
                    "{source}: {input}\n  got:  {e}\n  want: …{msg}…"
                );
            }
            (Is(a), Err(e)) => panic!("{source}: {input} should be {a:?}, was refused: {e}"),
            (Refused(_, msg), Ok(b)) => {
                panic!("{source}: {input} should be refused (…{msg}…), parsed as {b:?}")
            }
        }
    }
}

/// Seed 000, "Action Parsing and Validation": `<tool_call>{"action": "tap", ...}</tool_call>`
/// is a placeholder, not JSON; as text it is refused with the position of the error.
#[test]
fn the_seed_placeholder_is_refused_with_its_position() {
    let e = ActionParser::new()
        .parse_str(r#"{"action": "tap", ...}"#)
        .unwrap_err();
    assert!(
        matches!(
            e,
            ActionParseError::Json {
                line: 1,
                column: 19,
                ..
            }
        ),
        "{e}"
    );
}

/// Seed 000, "Extensibility": `register_action("custom_tap", ...)` adds it to the allowed list.
#[test]
fn the_seed_custom_action_is_accepted_once_registered() {
    let mut p = ActionParser::new();
    p.register("custom_tap").unwrap();
    let a = p.parse(&json!({"action": "custom_tap", "x": 1})).unwrap();
    assert_eq!(a.name(), "custom_tap");
}
