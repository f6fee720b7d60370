use serde_json::{Value, json};

use super::*;

fn el(id: u32, sel: &str, alts: &[&str], b: [i32; 4]) -> Value {
    json!({"element_id": id, "selector": sel, "alternative_selectors": alts, "type": "Button",
           "text": sel, "actions": ["click"], "bounds": {"left": b[0], "top": b[1], "right": b[2], "bottom": b[3]}})
}

fn step(n: u32, status: &str, action: Value, app: &str, hash: &str, elements: Vec<Value>) -> Step {
    serde_json::from_value(json!({
        "task_id": "01900000-0000-7000-8000-000000000000", "n": n, "started_at": "2026-11-24T10:00:00Z",
        "thinking": null, "action": action, "outcome": {"status": status},
        "screen": {"summary": "", "app": app, "layout_hash": hash, "size": [1000, 2000], "elements": elements},
        "screenshot": null, "timings": {"screenshot_ms": 0, "hierarchy_ms": 0, "inference_ms": 0, "action_ms": 0, "settle_ms": 0, "overhead_ms": 0.0}, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0
    }))
    .unwrap()
}

#[test]
fn coordinates_become_selectors_and_expect_comes_from_the_next_screen() {
    let list = vec![
        el(1, "[0.3]", &[":text(\"Ana\")"], [0, 400, 1000, 600]),
        el(2, "#fab_new", &[":desc(\"New\")"], [800, 1800, 1000, 2000]),
    ];
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "launch_app", "package": "com.droidpilot.messages"}),
            "com.android.launcher",
            "a",
            vec![],
        ),
        // A mis-tap that failed, and a tap undone by back: both left out.
        step(
            2,
            "failed",
            json!({"action": "tap", "element": 9}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            3,
            "ok",
            json!({"action": "tap", "coordinate": [0.9, 0.95]}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            4,
            "ok",
            json!({"action": "back"}),
            "com.droidpilot.messages",
            "c",
            vec![el(5, "#compose", &[], [0, 0, 10, 10])],
        ),
        step(
            5,
            "ok",
            json!({"action": "tap", "coordinate": [0.5, 0.25]}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            6,
            "ok",
            json!({"action": "type", "element": 7, "text": "••••"}),
            "com.droidpilot.messages",
            "d",
            vec![
                el(7, "#input_password", &[], [0, 0, 1000, 100]),
                el(8, "#btn_login", &[":text(\"Log in\")"], [0, 200, 1000, 300]),
            ],
        ),
        step(
            7,
            "ok",
            json!({"action": "finish", "success": true}),
            "com.droidpilot.messages",
            "e",
            vec![],
        ),
    ];
    let s = from_steps("open Ana's chat", &steps).unwrap();
    assert_eq!(s.app.as_deref(), Some("com.droidpilot.messages"));
    let got: Vec<_> = s
        .steps
        .iter()
        .map(|s| (s.action, s.selector.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (StepAction::LaunchApp, None),
            (StepAction::Tap, Some("[0.3]".into())),
            (StepAction::Type, Some("#input_password".into())),
        ]
    );
    assert_eq!(
        s.steps[0].expect.as_ref().unwrap().app.as_deref(),
        Some("com.droidpilot.messages")
    );
    // The index path keeps its text alternative; the coordinate stays for blind replay.
    assert_eq!(s.steps[1].alternative_selectors, [":text(\"Ana\")"]);
    assert_eq!(s.steps[1].parameters.coordinate, Some([0.5, 0.25]));
    assert_eq!(
        s.steps[1].expect.as_ref().unwrap().visible,
        ["#input_password"]
    );
    // The password becomes an input with no default: the secret is never stored.
    assert_eq!(s.steps[2].parameters.text.as_deref(), Some("${password}"));
    assert_eq!(s.inputs.get("password"), Some(&None));
}

#[test]
fn a_task_with_nothing_to_replay_is_refused() {
    let steps = vec![step(
        1,
        "ok",
        json!({"action": "finish", "success": true}),
        "x",
        "a",
        vec![],
    )];
    assert!(
        from_steps("x", &steps)
            .unwrap_err()
            .0
            .contains("no successful")
    );
}
