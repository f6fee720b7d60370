//! Table tests for every action's wire format and every validation message.

use super::*;
use serde_json::json;

fn parse(v: Value) -> Result<Action, ActionError> {
    ActionParser::new().parse(&v)
}

fn pt(x: f64, y: f64) -> NormPoint {
    NormPoint::new(x, y).unwrap()
}

#[test]
fn seed_examples_parse_as_written() {
    let table: Vec<(Value, Action)> = vec![
        (
            json!({"action": "tap", "coordinate": [0.5, 0.3]}),
            Action::Tap {
                target: TargetField(Target::Coordinate(pt(0.5, 0.3))),
            },
        ),
        (
            json!({"action": "tap", "element": 12}),
            Action::Tap {
                target: TargetField(Target::Element(12)),
            },
        ),
        (
            json!({"action": "tap", "selector": "#btn_send"}),
            Action::Tap {
                target: TargetField(Target::Selector("#btn_send".into())),
            },
        ),
        (
            json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2], "duration": 300}),
            Action::Swipe {
                path: SwipePath::Points {
                    start: pt(0.5, 0.8),
                    end: pt(0.5, 0.2),
                },
                duration_ms: Some(300),
            },
        ),
        (
            json!({"action": "type", "text": "search query"}),
            Action::Type {
                text: "search query".into(),
                target: None,
                clear_first: false,
            },
        ),
        (json!({"action": "back"}), Action::Key { key: Key::Back }),
        (json!({"action": "home"}), Action::Key { key: Key::Home }),
        (
            json!({"action": "recent"}),
            Action::Key { key: Key::Recents },
        ),
        (
            json!({"action": "FINISH", "reason": "Task completed successfully"}),
            Action::Finish {
                success: true,
                reason: Some("Task completed successfully".into()),
                answer: None,
            },
        ),
        (
            json!({"action": "ask_user", "question": "Which option do you prefer?"}),
            Action::AskUser {
                question: "Which option do you prefer?".into(),
                options: None,
            },
        ),
        (
            json!({"action": "mcp_call", "tool": "amap_search", "args": {"query": "coffee shop"}}),
            Action::McpCall {
                tool: "amap_search".into(),
                args: json!({"query": "coffee shop"}),
            },
        ),
    ];
    for (input, want) in table {
        assert_eq!(parse(input.clone()).unwrap(), want, "input: {input}");
    }
}

#[test]
fn every_action_kind_parses() {
    let table: Vec<(Value, &str)> = vec![
        (json!({"action": "click", "coordinate": [0.1, 0.2]}), "tap"),
        (
            json!({"action": "long_press", "element": 3, "duration_ms": 800}),
            "long_press",
        ),
        (
            json!({"action": "double_tap", "selector": ":text(\"OK\")"}),
            "double_tap",
        ),
        (json!({"action": "swipe", "direction": "up"}), "swipe"),
        (
            json!({"action": "swipe", "direction": "left", "selector": "#carousel"}),
            "swipe",
        ),
        (json!({"action": "scroll", "direction": "down"}), "scroll"),
        (
            json!({"action": "scroll", "direction": "down", "container": "#list"}),
            "scroll",
        ),
        (
            json!({"action": "type", "text": "hi", "element": 2, "clear_first": true}),
            "type",
        ),
        (json!({"action": "clear", "selector": "#input"}), "clear"),
        (json!({"action": "key", "key": "ENTER"}), "key"),
        (json!({"action": "enter"}), "key"),
        (json!({"action": "menu"}), "key"),
        (json!({"action": "power"}), "key"),
        (json!({"action": "recents"}), "key"),
        (
            json!({"action": "launch_app", "package": "com.android.settings"}),
            "launch_app",
        ),
        (
            json!({"action": "launch_app", "label": "Clock"}),
            "launch_app",
        ),
        (json!({"action": "open_app", "app": "Clock"}), "launch_app"),
        (
            json!({"action": "open_url", "url": "https://example.org"}),
            "open_url",
        ),
        (json!({"action": "wait", "ms": 500}), "wait"),
        (
            json!({"action": "wait_for", "selector": "#done", "timeout_ms": 3000}),
            "wait_for",
        ),
        (
            json!({"action": "wait_for_gone", "selector": "#spinner"}),
            "wait_for_gone",
        ),
        (
            json!({"action": "finish", "success": false, "reason": "no network"}),
            "finish",
        ),
        (
            json!({"action": "Long Press", "coordinate": [0.5, 0.5]}),
            "long_press",
        ),
    ];
    for (input, name) in table {
        let a = parse(input.clone()).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(a.name(), name, "input: {input}");
    }
}

#[test]
fn launch_app_reads_package_or_label() {
    assert_eq!(
        parse(json!({"action": "launch_app", "app": "com.android.deskclock"})).unwrap(),
        Action::LaunchApp {
            app: AppRef::Package("com.android.deskclock".into())
        }
    );
    assert_eq!(
        parse(json!({"action": "launch_app", "app": "Google Maps"})).unwrap(),
        Action::LaunchApp {
            app: AppRef::Label("Google Maps".into())
        }
    );
}

#[test]
fn finish_status_words() {
    let a = parse(json!({"action": "finish", "status": "failure", "reason": "x"})).unwrap();
    assert!(matches!(a, Action::Finish { success: false, .. }));
    let a = parse(json!({"action": "finish", "answer": "42"})).unwrap();
    assert_eq!(
        a,
        Action::Finish {
            success: true,
            reason: None,
            answer: Some("42".into())
        }
    );
}

#[test]
fn validation_messages_are_for_people() {
    let table: Vec<(Value, &str)> = vec![
        (
            json!({"action": "tapp", "coordinate": [0.5, 0.5]}),
            "unknown action `tapp` (did you mean `tap`?); allowed actions: tap, long_press",
        ),
        (json!({"action": "swip"}), "did you mean `swipe`?"),
        (
            json!({"action": "fly"}),
            "unknown action `fly`; allowed actions: tap,",
        ),
        (
            json!({"action": "tap", "coordinate": [1.2, 0.5]}),
            "Agent predicted invalid coordinate: [1.2, 0.5]. Coordinates must be in [0, 1].",
        ),
        (
            json!({"action": "tap"}),
            "`tap` needs field `coordinate`: give one of `coordinate`",
        ),
        (
            json!({"action": "tap", "coordnate": [0.5, 0.5]}),
            "`tap` has unknown field `coordnate` (did you mean `coordinate`?)",
        ),
        (
            json!({"action": "type", "text": 5}),
            "`type` field `text` is invalid: expected a string, got a number",
        ),
        (json!({"action": "type"}), "`type` needs field `text`"),
        (
            json!({"action": "tap", "element": "three"}),
            "`tap` field `element` is invalid: expected an element id",
        ),
        (
            json!({"action": "tap", "element": 1, "coordinate": [0.1, 0.1]}),
            "`tap` takes only one of `coordinate`, `pixel`, `element`, `element_id`, `selector`, got `coordinate` and `element`",
        ),
        (
            json!({"action": "swipe", "start": [0.5, 0.5]}),
            "`swipe` needs field `end`",
        ),
        (
            json!({"action": "swipe"}),
            "`swipe` needs field `start`: give `start` and `end`",
        ),
        (
            json!({"action": "swipe", "start": [0.5, 0.5], "end": [0.5], "duration": 100}),
            "`swipe` field `end` is invalid: expected [x, y]",
        ),
        (
            json!({"action": "scroll", "direction": "sideways"}),
            "`sideways` is not one of up, down, left, right",
        ),
        (
            json!({"action": "key", "key": "volume_up"}),
            "unknown key `volume_up`; allowed keys: back, home, recents, enter, menu, power",
        ),
        (
            json!({"action": "wait", "ms": -5}),
            "`wait` field `ms` is invalid: expected whole milliseconds",
        ),
        (
            json!({"action": "wait", "ms": 3_600_000}),
            "longer than the limit",
        ),
        (json!({"action": "wait"}), "`wait` needs field `ms`"),
        (
            json!({"action": "open_url", "url": "example.org"}),
            "has no scheme; write it as https://example.org",
        ),
        (
            json!({"action": "ask_user", "question": ""}),
            "`ask_user` field `question` is invalid: must not be empty",
        ),
        (
            json!({"action": "ask_user", "question": "q", "options": [1, 2]}),
            "expected a list of strings",
        ),
        (
            json!({"action": "mcp_call", "tool": "x", "args": [1]}),
            "`mcp_call` field `args` is invalid: expected an object, got an array",
        ),
        (
            json!({"action": "type", "text": "a", "clear_frist": true}),
            "`type` has unknown field `clear_frist` (did you mean `clear_first`?)",
        ),
        (
            json!({"action": "launch_app"}),
            "`launch_app` needs field `package`",
        ),
        (
            json!({"action": 5}),
            "missing field `action`; allowed actions: tap",
        ),
        (json!({"coordinate": [0.5, 0.5]}), "missing field `action`"),
        (json!([1, 2]), "must be a JSON object"),
    ];
    for (input, want) in table {
        let err = parse(input.clone()).expect_err(&format!("{input} should fail"));
        let msg = err.to_string();
        assert!(
            msg.contains(want),
            "input {input}\n  got:  {msg}\n  want: …{want}…"
        );
    }
}

#[test]
fn error_codes_and_hints() {
    let e = parse(json!({"action": "tapp"})).unwrap_err();
    assert_eq!(e.code(), "unknown_action");
    assert!(e.hint().contains("`tap`"));
    let e = parse(json!({"action": "tap", "coordinate": [2, 0]})).unwrap_err();
    assert_eq!(e.code(), "invalid_coordinate");
    assert_eq!(
        parse(json!({"action": "type"})).unwrap_err().code(),
        "invalid_action"
    );
}

/// A field the action does not use is refused by name, for every action, never dropped.
#[test]
fn unknown_fields_are_refused_by_name() {
    let table: Vec<(Value, &str)> = vec![
        (
            json!({"action": "tap", "element": 3, "bogus": 1}),
            "`tap` has unknown field `bogus`; `tap` takes: coordinate, pixel, element, element_id, selector",
        ),
        (
            json!({"action": "tap", "element": 4, "thought": "the send button"}),
            "`tap` has unknown field `thought`",
        ),
        (
            json!({"action": "type", "text": "a", "elemnt_id": 2}),
            "`type` has unknown field `elemnt_id` (did you mean `element_id`?)",
        ),
        (
            json!({"action": "back", "key": "home"}),
            "`back` has unknown field `key`; `back` takes: no fields",
        ),
        (
            json!({"action": "wait", "ms": 5, "timeout_ms": 9}),
            "`wait` has unknown field `timeout_ms`",
        ),
        (
            json!({"action": "global_action", "global_action": "BACK", "element_id": 1}),
            "`global_action` has unknown field `element_id`",
        ),
        (
            json!({"action": "launch_app", "package": "com.a.b", "activity": ".Main"}),
            "`launch_app` has unknown field `activity`",
        ),
        (
            json!({"action": "finish", "sucess": true}),
            "`finish` has unknown field `sucess` (did you mean `success`?)",
        ),
    ];
    for (input, want) in table {
        let e = parse(input.clone()).expect_err(&format!("{input} should be refused"));
        assert!(
            e.to_string().contains(want),
            "{input}\n  got:  {e}\n  want: …{want}…"
        );
        assert_eq!(e.code(), "invalid_action");
    }
    // Every built-in action refuses a stray field, and even a null one is not ignored.
    for name in BUILTIN_ACTIONS {
        let e = parse(json!({"action": name, "zzz_stray": null})).unwrap_err();
        assert!(
            e.to_string().contains("unknown field `zzz_stray`"),
            "{name}: {e}"
        );
    }
}

/// Each action's list of known fields carries every target field, so `element_id` or
/// `pixel` cannot be refused by one action while accepted by another.
#[test]
fn every_targeted_action_knows_every_target_field() {
    for action in [
        "tap",
        "double_tap",
        "long_press",
        "swipe",
        "scroll",
        "type",
        "clear",
    ] {
        let known = Fields {
            action,
            obj: &Map::new(),
            recorded: false,
        }
        .known_fields();
        for f in TARGET_FIELDS {
            assert!(known.contains(f), "{action} lacks {f}");
        }
    }
}

/// AURA's five primitives (seed 004), verbatim.
#[test]
fn aura_primitives_parse() {
    let table: Vec<(Value, Action)> = vec![
        (
            json!({"action": "click", "element_id": 1}),
            Action::Tap {
                target: TargetField(Target::Element(1)),
            },
        ),
        (
            json!({"action": "type", "element_id": 2, "text": "hello@gmail.com"}),
            Action::Type {
                text: "hello@gmail.com".into(),
                target: Some(TargetField(Target::Element(2))),
                clear_first: false,
            },
        ),
        (
            json!({"action": "global_action", "global_action": "BACK"}),
            Action::Key { key: Key::Back },
        ),
        (
            json!({"action": "global_action", "global_action": "HOME"}),
            Action::Key { key: Key::Home },
        ),
        (
            json!({"action": "global_action", "global_action": "RECENTS"}),
            Action::Key { key: Key::Recents },
        ),
        (
            json!({"action": "global_action", "global_action": "power"}),
            Action::Key { key: Key::Power },
        ),
        (
            json!({"action": "long_press", "element_id": 7}),
            Action::LongPress {
                target: TargetField(Target::Element(7)),
                duration_ms: None,
            },
        ),
        (
            json!({"action": "scroll", "direction": "down", "element_id": 4}),
            Action::Scroll {
                direction: Direction::Down,
                container: Some(TargetField(Target::Element(4))),
            },
        ),
    ];
    for (input, want) in table {
        assert_eq!(parse(input.clone()).unwrap(), want, "input: {input}");
    }
    let e = parse(json!({"action": "global_action", "global_action": "VOLUME_UP"})).unwrap_err();
    assert!(
        e.to_string()
            .contains("`global_action` field `global_action` is invalid: unknown key `VOLUME_UP`"),
        "{e}"
    );
    let e = parse(json!({"action": "global_action"})).unwrap_err();
    assert!(e.to_string().contains("needs field `global_action`"), "{e}");
    let e = parse(json!({"action": "tap", "element": 1, "element_id": 1})).unwrap_err();
    assert!(
        e.to_string().contains("got `element` and `element_id`"),
        "{e}"
    );
    let e = parse(json!({"action": "click", "element_id": -1})).unwrap_err();
    assert!(
        e.to_string()
            .contains("`tap` field `element_id` is invalid"),
        "{e}"
    );
}

#[test]
fn pixel_targets_are_whole_pixels() {
    assert_eq!(
        parse(json!({"action": "tap", "pixel": [540, 1200]})).unwrap(),
        Action::Tap {
            target: TargetField(Target::Pixel([540, 1200]))
        }
    );
    assert_eq!(
        parse(json!({"action": "long_press", "pixel": [10.0, 20.0]})).unwrap(),
        Action::LongPress {
            target: TargetField(Target::Pixel([10, 20])),
            duration_ms: None,
        }
    );
    for bad in [
        json!([-1, 5]),
        json!([0.5, 0.5]),
        json!([1]),
        json!("540,1200"),
    ] {
        let e = parse(json!({"action": "tap", "pixel": bad})).unwrap_err();
        assert!(
            e.to_string()
                .contains("`tap` field `pixel` is invalid: expected [x, y] in whole pixels"),
            "{bad}: {e}"
        );
    }
    let e = parse(json!({"action": "tap", "pixel": [1, 2], "coordinate": [0.1, 0.2]})).unwrap_err();
    assert!(
        e.to_string().contains("got `coordinate` and `pixel`"),
        "{e}"
    );
}

/// The seed's message is for models; a REST caller is told which field, without blame.
#[test]
fn caller_messages_name_the_field_and_blame_no_agent() {
    let e = parse(json!({"action": "tap", "coordinate": [1.2, 0.5]})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Agent predicted invalid coordinate: [1.2, 0.5]. Coordinates must be in [0, 1]."
    );
    assert_eq!(
        e.caller_message(),
        "`tap` field `coordinate` is invalid: [1.2, 0.5] is outside [0, 1]; `coordinate` is a fraction of the screen"
    );
    assert!(e.hint().contains("`pixel`"), "{}", e.hint());
    let e = parse(json!({"action": "swipe", "start": [0.5, 0.5], "end": [0.5, 3]})).unwrap_err();
    assert!(
        e.caller_message()
            .starts_with("`swipe` field `end` is invalid"),
        "{}",
        e.caller_message()
    );
    let e = parse(json!({"action": "tapp"})).unwrap_err();
    assert_eq!(e.caller_message(), e.to_string());
}

/// URLs and apps are checked where the field is known, before anything reaches a phone.
#[test]
fn urls_and_apps_are_validated_at_parse_time() {
    for ok in [
        "https://example.org",
        "http://10.0.0.2:8080/a?b=c",
        "intent://scan/#Intent;scheme=zxing;end",
        "market://details?id=com.a.b",
        "tel:+15551234",
        "mailto:a@b.org",
        "geo:0,0?q=coffee",
        "HTTPS://EXAMPLE.ORG",
    ] {
        let a = parse(json!({"action": "open_url", "url": ok}));
        assert!(a.is_ok(), "{ok}: {a:?}");
    }
    for (bad, want) in [
        (
            "javascript:alert(1)",
            "scheme `javascript:` is not allowed; allowed schemes: http, https,",
        ),
        ("file:///sdcard/secret.db", "scheme `file:` is not allowed"),
        (
            "content://contacts/people",
            "scheme `content:` is not allowed",
        ),
        ("data:text/html,<b>", "scheme `data:` is not allowed"),
        (
            "example.org",
            "has no scheme; write it as https://example.org",
        ),
        ("https://a.org/x; reboot", "contains ' '"),
        ("https://a.org/\nreboot", "contains '\\n'"),
    ] {
        let e = parse(json!({"action": "open_url", "url": bad})).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("`open_url` field `url` is invalid")
                && e.to_string().contains(want),
            "{bad}: {e}"
        );
    }
    for (input, field) in [
        (
            json!({"action": "launch_app", "package": "com.evil; reboot"}),
            "package",
        ),
        (
            json!({"action": "launch_app", "package": "com.evil$(reboot)"}),
            "package",
        ),
        (
            json!({"action": "launch_app", "package": "settings"}),
            "package",
        ),
        (
            json!({"action": "launch_app", "package": "com.1bad.app"}),
            "package",
        ),
        (
            json!({"action": "launch_app", "app": "com.evil; reboot"}),
            "app",
        ),
        (
            json!({"action": "launch_app", "label": "Clock`reboot`"}),
            "label",
        ),
        (
            json!({"action": "launch_app", "label": "Clock\nreboot"}),
            "label",
        ),
        (json!({"action": "launch_app", "label": "a | b"}), "label"),
    ] {
        let e = parse(input.clone()).expect_err(&format!("{input} should be refused"));
        assert!(
            e.to_string()
                .starts_with(&format!("`launch_app` field `{field}` is invalid")),
            "{input}: {e}"
        );
    }
    for (input, want) in [
        (
            json!({"action": "launch_app", "package": "com.android.settings"}),
            AppRef::Package("com.android.settings".into()),
        ),
        (
            json!({"action": "launch_app", "package": "com.example.my_app2"}),
            AppRef::Package("com.example.my_app2".into()),
        ),
        (
            json!({"action": "launch_app", "label": "myAT&T"}),
            AppRef::Label("myAT&T".into()),
        ),
        (
            json!({"action": "launch_app", "label": "McDonald's"}),
            AppRef::Label("McDonald's".into()),
        ),
        (
            json!({"action": "launch_app", "app": "Google Maps"}),
            AppRef::Label("Google Maps".into()),
        ),
    ] {
        assert_eq!(
            parse(input.clone()).unwrap(),
            Action::LaunchApp { app: want },
            "{input}"
        );
    }
}
/// Every selector an action carries is listed with its field, so a list can be checked
/// before it runs.
#[test]
fn selectors_lists_every_selector_with_its_field() {
    let table: Vec<(Value, Vec<(&str, &str)>)> = vec![
        (
            json!({"action": "tap", "selector": "#a"}),
            vec![("selector", "#a")],
        ),
        (
            json!({"action": "long_press", "selector": "#b"}),
            vec![("selector", "#b")],
        ),
        (
            json!({"action": "double_tap", "selector": "#c"}),
            vec![("selector", "#c")],
        ),
        (
            json!({"action": "swipe", "direction": "left", "selector": "#d"}),
            vec![("selector", "#d")],
        ),
        (
            json!({"action": "scroll", "direction": "down", "container": "#e"}),
            vec![("container", "#e")],
        ),
        (
            json!({"action": "type", "text": "x", "selector": "#f"}),
            vec![("selector", "#f")],
        ),
        (
            json!({"action": "clear", "selector": "#g"}),
            vec![("selector", "#g")],
        ),
        (
            json!({"action": "wait_for", "selector": "#h"}),
            vec![("selector", "#h")],
        ),
        (
            json!({"action": "wait_for_gone", "selector": "#i"}),
            vec![("selector", "#i")],
        ),
        (json!({"action": "tap", "element": 1}), vec![]),
        (json!({"action": "back"}), vec![]),
    ];
    for (input, want) in table {
        assert_eq!(parse(input.clone()).unwrap().selectors(), want, "{input}");
    }
}

#[test]
fn json_syntax_errors_give_the_position() {
    let e = ActionParser::new()
        .parse_str("{\"action\": \"tap\", \"coordinate\": [0.5, }")
        .unwrap_err();
    assert!(
        matches!(e, ActionParseError::Json { line: 1, column, .. } if column > 30),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("invalid JSON at line 1, column"),
        "{e}"
    );
}

#[test]
fn custom_actions_registered_at_run_time() {
    let mut p = ActionParser::new();
    assert!(p.parse(&json!({"action": "take_photo"})).is_err());
    p.register("take_photo").unwrap();
    let a = p
        .parse(&json!({"action": "take_photo", "camera": "front"}))
        .unwrap();
    assert_eq!(a.name(), "take_photo");
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({"action": "take_photo", "camera": "front"})
    );
    assert!(p.allowed().contains(&"take_photo".to_string()));
    assert!(p.register("tap").is_err(), "built-ins cannot be shadowed");
    assert!(p.register("click").is_err(), "aliases cannot be shadowed");
    assert!(p.register("rm -rf").is_err());
}

/// Serializing any action and parsing it back gives the same action.
#[test]
fn round_trip_every_kind() {
    let inputs = vec![
        json!({"action": "tap", "coordinate": [0.5, 0.3]}),
        json!({"action": "tap", "selector": "#a"}),
        json!({"action": "tap", "pixel": [540, 1200]}),
        json!({"action": "long_press", "element": 3, "duration_ms": 800}),
        json!({"action": "double_tap", "element": 1}),
        json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2], "duration_ms": 300}),
        json!({"action": "swipe", "direction": "left", "selector": "#carousel"}),
        json!({"action": "scroll", "direction": "down", "container": "#list"}),
        json!({"action": "scroll", "direction": "up", "element": 7}),
        json!({"action": "type", "text": "héllo 世界 🎉", "element": 2, "clear_first": true}),
        json!({"action": "type", "text": " "}),
        json!({"action": "clear"}),
        json!({"action": "key", "key": "power"}),
        json!({"action": "launch_app", "label": "Clock"}),
        json!({"action": "launch_app", "package": "com.android.settings"}),
        json!({"action": "open_url", "url": "https://example.org"}),
        json!({"action": "wait", "ms": 10}),
        json!({"action": "wait_for", "selector": "#x", "timeout_ms": 100}),
        json!({"action": "wait_for_gone", "selector": "#x", "timeout_ms": 100}),
        json!({"action": "finish", "success": false, "reason": "r", "answer": "a"}),
        json!({"action": "ask_user", "question": "q", "options": ["a", "b"]}),
        json!({"action": "mcp_call", "tool": "t", "args": {"k": 1}}),
    ];
    for input in inputs {
        let a = parse(input.clone()).unwrap_or_else(|e| panic!("{input}: {e}"));
        let out = serde_json::to_value(&a).unwrap();
        assert_eq!(parse(out.clone()).unwrap(), a, "{input} → {out}");
        let via_serde: Action = serde_json::from_value(out).unwrap();
        assert_eq!(via_serde, a);
    }
}

#[test]
fn serialized_form_is_canonical() {
    let a = parse(json!({"action": "click", "coordinate": [0.5, 0.3]})).unwrap();
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({"action": "tap", "coordinate": [0.5, 0.3]})
    );
    let a = parse(json!({"action": "recent"})).unwrap();
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({"action": "key", "key": "recents"})
    );
}

/// A key's name is serde's; models' spellings (any case, `-` or space for `_`, the
/// aliases of `recents`) parse, and nothing else does.
#[test]
fn key_names_and_the_spellings_models_write() {
    for (k, name) in [
        (Key::Back, "back"),
        (Key::Home, "home"),
        (Key::Recents, "recents"),
        (Key::Enter, "enter"),
        (Key::Menu, "menu"),
        (Key::Power, "power"),
    ] {
        assert_eq!(k.name(), name);
        assert_eq!(serde_json::to_value(k).unwrap(), name);
        assert_eq!(Key::parse(&name.to_uppercase()), Some(k));
    }
    for alias in ["recent", "Recent Apps", "app-switch", " APP_SWITCH "] {
        assert_eq!(Key::parse(alias), Some(Key::Recents), "{alias}");
    }
    for not_a_key in ["volume_up", "", "backk", "recentsapps"] {
        assert_eq!(Key::parse(not_a_key), None, "{not_a_key}");
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            any::<i64>().prop_map(|i| Value::Number(i.into())),
            "[a-z_ ]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("action".to_string()),
                        Just("coordinate".to_string()),
                        Just("element".to_string()),
                        Just("element_id".to_string()),
                        Just("pixel".to_string()),
                        Just("selector".to_string()),
                        Just("text".to_string()),
                        Just("start".to_string()),
                        Just("end".to_string()),
                        Just("direction".to_string()),
                        Just("ms".to_string()),
                        "[a-z]{1,8}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_input_panics(mut v in arb_json(), name in prop::sample::select(BUILTIN_ACTIONS.to_vec())) {
            let _ = parse(v.clone());
            if let Value::Object(m) = &mut v {
                m.insert("action".into(), Value::String(name.into()));
            }
            if let Ok(a) = parse(v) {
                // Whatever parses must survive its own round trip.
                let out = serde_json::to_value(&a).unwrap();
                prop_assert_eq!(parse(out).unwrap(), a);
            }
        }

        #[test]
        fn no_text_panics(s in ".{0,64}") {
            let _ = ActionParser::new().parse_str(&s);
        }
    }
}

/// `type` with "" types nothing and a swipe of 0 ms is no gesture: both refused by
/// name, the message saying what to send instead; a record holding one still reads.
#[test]
fn empty_text_and_zero_ms_swipes_are_refused_but_records_still_read() {
    for (v, field, says) in [
        (json!({"action": "type", "text": ""}), "text", "clear"),
        (
            json!({"action": "type", "text": "", "clear_first": true}),
            "text",
            "clear",
        ),
        (
            json!({"action": "swipe", "direction": "up", "duration_ms": 0}),
            "duration_ms",
            "at least 1 ms",
        ),
        (
            json!({"action": "swipe", "start": [0.1, 0.1], "end": [0.2, 0.2], "duration": 0}),
            "duration",
            "at least 1 ms",
        ),
    ] {
        match parse(v.clone()) {
            Err(e @ ActionError::InvalidField { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("field `{field}`")) && msg.contains(says),
                    "{msg}"
                );
                assert!(
                    !e.hint().contains("action reference"),
                    "a specific hint: {}",
                    e.hint()
                );
            }
            other => panic!("{v}: {other:?}"),
        }
        assert!(
            ActionParser::lenient().parse(&v).is_ok(),
            "a stored {v} reads back"
        );
    }
}

/// `rotate` takes Android's four orientations by our names and Maestro's, in any case,
/// and writes the canonical name back.
#[test]
fn rotate_reads_orientations_by_any_common_name() {
    for (given, want, rotation) in [
        ("portrait", Orientation::Portrait, 0),
        ("LANDSCAPE_LEFT", Orientation::Landscape, 1),
        ("Upside-Down", Orientation::ReversePortrait, 2),
        ("landscape_right", Orientation::ReverseLandscape, 3),
    ] {
        let a = parse(json!({"action": "rotate", "orientation": given})).unwrap();
        assert_eq!(a, Action::Rotate { orientation: want }, "{given}");
        assert_eq!(want.rotation(), rotation);
        assert_eq!(Orientation::from_rotation(rotation), Some(want));
        let back = serde_json::to_value(&a).unwrap();
        assert_eq!(back["orientation"], want.name());
        assert_eq!(parse(back).unwrap(), a, "round trip");
    }
    let e = parse(json!({"action": "rotate"})).unwrap_err();
    assert!(e.to_string().contains("orientation"), "{e}");
}
