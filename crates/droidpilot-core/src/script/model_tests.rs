use serde_json::json;

use super::*;
use crate::domain::Target;

fn script(steps: Value) -> Value {
    json!({"name": "n", "goal": "g", "inputs": {"msg": null}, "steps": steps})
}

#[test]
fn a_recorded_flow_parses_and_builds_its_actions() {
    let s = Script::from_json(&script(json!([
        {"action": "launch_app", "parameters": {"package": "com.droidpilot.messages"}},
        {"action": "tap", "selector": "#fab_new", "wait_condition": {"selector": "#fab_new"},
         "expect": {"visible": ["#input_message"]}},
        {"action": "type", "selector": "#input_message", "parameters": {"text": "${msg}", "store_as": "sent"}},
        {"action": "tap", "selector": "[0.2.1]", "alternative_selectors": [":text(\"Send\")"],
         "recovery_hints": [{"trigger": "element_not_found:*", "hint": "the send button may be an icon"}]},
        {"action": "scroll", "parameters": {"direction": "down", "until": ":text(\"${sent}\")"}}
    ])))
    .unwrap();
    let mut vars = Vars::default();
    vars.set("msg", "hello".into());
    let a = s.steps[2]
        .to_action(s.steps[2].selector.as_deref(), &vars)
        .unwrap();
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({"action": "type", "text": "hello", "selector": "#input_message"})
    );
    let alt = s.steps[3]
        .to_action(Some(":text(\"Send\")"), &vars)
        .unwrap();
    assert!(
        matches!(alt, Action::Tap { target: crate::domain::action::TargetField(Target::Selector(ref s)) } if s == ":text(\"Send\")")
    );
}

#[test]
fn unknown_variables_name_the_step_and_field() {
    let e = Script::from_json(&script(json!([
        {"action": "type", "selector": "#to", "parameters": {"text": "${recipient}"}}
    ])))
    .unwrap_err();
    assert_eq!(
        (e.code, e.path.as_str()),
        ("unknown_variable", "steps[0].parameters.text")
    );
    assert!(
        e.message.contains("recipient") && e.message.contains("msg"),
        "{}",
        e.message
    );
    // store_as makes a name known to later steps only.
    let e = Script::from_json(&script(json!([
        {"action": "tap", "selector": ":text(\"${total}\")"},
        {"action": "wait_for", "selector": "#total", "parameters": {"store_as": "total"}}
    ])))
    .unwrap_err();
    assert_eq!(e.path, "steps[0].selector");
}

#[test]
fn malformed_selectors_name_their_position() {
    let e = Script::from_json(&script(
        json!([{"action": "tap", "selector": ":text(\"Send)"}]),
    ))
    .unwrap_err();
    assert_eq!(
        (e.code, e.path.as_str()),
        ("invalid_selector", "steps[0].selector")
    );
    assert!(e.message.contains("column"), "{}", e.message);
    assert!(e.hint.contains('^'), "{}", e.hint);
    let e = Script::from_json(&script(json!([
        {"action": "tap", "selector": "#ok", "expect": {"gone": ["#ok", "Button:txt(\"x\")"]}}
    ])))
    .unwrap_err();
    assert_eq!(e.path, "steps[0].expect.gone[1]");
}

#[test]
fn index_selectors_need_an_alternative() {
    let e =
        Script::from_json(&script(json!([{"action": "tap", "selector": "[0.1.2]"}]))).unwrap_err();
    assert_eq!(e.path, "steps[0].alternative_selectors");
}

#[test]
fn unused_and_unknown_fields_are_refused_by_name() {
    let e = Script::from_json(&script(
        json!([{"action": "tap", "selector": "#a", "parameters": {"text": "x"}}]),
    ))
    .unwrap_err();
    assert!(
        e.path.starts_with("steps[0].parameters") && e.message.contains("text"),
        "{e:?}"
    );
    let e = Script::from_json(&script(json!([{"action": "tap", "selectr": "#a"}]))).unwrap_err();
    assert!(e.message.contains("selectr"), "{e:?}");
    let e = Script::from_json(&script(
        json!([{"action": "key", "selector": "#a", "parameters": {"key": "back"}}]),
    ))
    .unwrap_err();
    assert_eq!(e.path, "steps[0].selector");
    let e = Script::from_json(&script(json!([{"action": "tap"}]))).unwrap_err();
    assert!(e.message.contains("needs a selector"), "{e:?}");
    let e = Script::from_json(&script(json!([{"action": "finish"}]))).unwrap_err();
    assert!(e.message.contains("finish"), "{e:?}");
}

#[test]
fn outputs_must_be_set_somewhere() {
    let mut v = script(json!([{"action": "key", "parameters": {"key": "back"}}]));
    v["outputs"] = json!(["total"]);
    let e = Script::from_json(&v).unwrap_err();
    assert_eq!(
        (e.code, e.path.as_str()),
        ("unknown_variable", "outputs[0]")
    );
}

#[test]
fn a_script_round_trips_through_json() {
    let v = script(json!([
        {"action": "tap", "parameters": {"coordinate": [0.5, 0.9]}, "optional": true},
        {"action": "wait_for", "selector": "#done", "parameters": {"timeout_ms": 8000}}
    ]));
    let s = Script::from_json(&v).unwrap();
    assert_eq!(s.max_recovery_attempts, 3);
    let back = Script::from_json(&serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(s, back);
    let a = s.steps[1]
        .to_action(Some("#done"), &Vars::default())
        .unwrap();
    assert_eq!(
        serde_json::to_value(a).unwrap(),
        json!({"action": "wait_for", "selector": "#done", "timeout_ms": 8000})
    );
}

#[test]
fn a_secret_input_round_trips_and_has_no_default_and_is_no_output() {
    let doc = |inputs: Value, outputs: Value| {
        json!({"name": "n", "goal": "g", "inputs": inputs, "outputs": outputs,
            "steps": [{"action": "type", "selector": "#pw", "parameters": {"text": "${pw}"}}]})
    };
    let s =
        Script::from_json(&doc(json!({"pw": {"secret": true}, "u": "ana"}), json!([]))).unwrap();
    assert_eq!(s.inputs["pw"], Input::secret());
    assert_eq!(s.inputs["u"].default.as_deref(), Some("ana"));
    let back = serde_json::to_value(&s).unwrap();
    assert_eq!(back["inputs"], json!({"pw": {"secret": true}, "u": "ana"}));
    let e = Script::from_json(&doc(
        json!({"pw": {"secret": true, "default": "x"}}),
        json!([]),
    ))
    .unwrap_err();
    assert_eq!(e.path, "inputs.pw.default");
    let e = Script::from_json(&doc(json!({"pw": {"secret": true}}), json!(["pw"]))).unwrap_err();
    assert_eq!(e.path, "outputs[0]");
    let e = Script::from_json(&doc(json!({"pw": {"hidden": true}}), json!([]))).unwrap_err();
    assert!(e.message.contains("hidden"), "{}", e.message);
}

/// A `custom` step carries its call and nothing a target would use; `custom` on another
/// action, or a built-in action's name, is refused naming the field.
#[test]
fn a_custom_step_is_its_call_and_nothing_else() {
    let ok = Script::from_json(&script(json!([
        {"action": "custom", "custom": {"name": "sign_in", "params": {"msg": "${msg}"}},
         "expect": {"visible": ["#done"]}}
    ])));
    assert!(ok.is_ok(), "{ok:?}");
    for (step, path) in [
        (json!({"action": "custom"}), "steps[0].custom"),
        (
            json!({"action": "tap", "selector": "#a", "custom": {"name": "x"}}),
            "steps[0].custom",
        ),
        (
            json!({"action": "custom", "custom": {"name": "tap"}}),
            "steps[0].custom.name",
        ),
        (
            json!({"action": "custom", "custom": {"name": "x"}, "parameters": {"text": "a"}}),
            "steps[0].parameters",
        ),
        (
            json!({"action": "custom", "custom": {"name": "x", "params": {"a": "${nope}"}}}),
            "steps[0].custom.params.a",
        ),
    ] {
        let e = Script::from_json(&script(json!([step]))).unwrap_err();
        assert_eq!(e.path, path, "{e}");
    }
}

/// `at` is a point within the step's element: a touch with a selector takes it, and the
/// step's action is the touch on that selector (the replay aims it inside the element);
/// anything else is refused by field with a hint.
#[test]
fn a_point_within_the_element_is_for_touches_with_a_selector() {
    let s = Script::from_json(&script(json!([
        {"action": "tap", "selector": "#seekbar", "parameters": {"at": [0.25, 0.5]}}
    ])))
    .unwrap();
    assert_eq!(s.steps[0].parameters.at, Some([0.25, 0.5]));
    for (step, why) in [
        (
            json!({"action": "key", "parameters": {"key": "back", "at": [0.5, 0.5]}}),
            "key",
        ),
        (
            json!({"action": "tap", "parameters": {"coordinate": [0.5, 0.5], "at": [0.5, 0.5]}}),
            "without one",
        ),
        (
            json!({"action": "tap", "selector": "#seekbar", "parameters": {"at": [1.5, 0.5]}}),
            "outside",
        ),
    ] {
        let e = Script::from_json(&script(json!([step]))).unwrap_err();
        assert_eq!(e.path, "steps[0].parameters.at", "{why}: {e:?}");
        assert!(e.message.contains(why), "{}", e.message);
        assert!(!e.hint.is_empty());
    }
}
