//! `POST /v1/devices/{id}/actions` as a person or a script calls it (issue 10): AURA's
//! primitives, unknown fields, pixel targets, caller mistakes as 4xx, malformed selectors,
//! and `screen_state` only on request. Real server, real virtual phone.

use std::sync::Arc;

use droidpilot::device::Device;
use droidpilot::device::sim::{SimConfig, SimDevice};
use serde_json::{Value, json};

use crate::common::{TestApp, error_of, spawn_app_with};

const ACT: &str = "/v1/devices/sim-1/actions";

/// A server whose only device is a 540×1200 virtual phone `sim-1`.
async fn app_with_phone() -> (TestApp, Arc<SimDevice>) {
    let app = spawn_app_with(&[]).await;
    for d in app.pool.list() {
        app.pool.remove(&d.id).await.unwrap();
    }
    let phone = Arc::new(
        SimDevice::new(SimConfig {
            serial: "sim-1".into(),
            width: 540,
            height: 1200,
            ..Default::default()
        })
        .unwrap(),
    );
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    (app, phone)
}

async fn act_ok(app: &TestApp, action: Value) -> Value {
    let r = app.post_json(ACT, &action).await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{action} → {body}");
    body
}

/// The actionable element on the current screen whose selector is `selector`.
async fn element_id(app: &TestApp, selector: &str) -> u64 {
    let screen: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    screen["actionable_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["selector"] == selector)
        .unwrap_or_else(|| panic!("no `{selector}` on {screen:#}"))["element_id"]
        .as_u64()
        .unwrap()
}

/// The text of the EditText with this resource id, read from the phone's hierarchy.
async fn field_text(phone: &SimDevice, id: &str) -> String {
    let xml = phone.hierarchy().await.unwrap();
    let node = xml
        .split("<node ")
        .find(|n| n.contains(&format!("resource-id=\"com.android.contacts:id/{id}\"")))
        .unwrap_or_else(|| panic!("no {id} in {xml}"));
    let start = node.find(" text=\"").unwrap() + 7;
    node[start..start + node[start..].find('"').unwrap()].to_string()
}

#[tokio::test]
async fn aura_primitives_drive_the_phone_verbatim() {
    let (app, phone) = app_with_phone().await;
    act_ok(
        &app,
        json!({"action": "launch_app", "package": "com.android.contacts"}),
    )
    .await;
    // click by element_id (seed 004's field name) opens the form.
    let fab = element_id(&app, "#floating_action_button").await;
    let r = act_ok(&app, json!({"action": "click", "element_id": fab})).await;
    assert_eq!(r["action"], json!({"action": "tap", "element": fab}));
    let name = element_id(&app, "#name_edit").await;
    let phone_field = element_id(&app, "#phone_edit").await;
    // The name field has focus; typing with element_id must go to the phone field.
    act_ok(&app, json!({"action": "click", "element_id": name})).await;
    act_ok(
        &app,
        json!({"action": "type", "element_id": phone_field, "text": "5550100"}),
    )
    .await;
    assert_eq!(field_text(&phone, "phone_edit").await, "5550100");
    // (An empty EditText shows its hint as text, as on a real phone.)
    assert_eq!(field_text(&phone, "name_edit").await, "Name");

    // global_action: BACK, HOME, RECENTS, POWER (any case), on the virtual phone.
    act_ok(
        &app,
        json!({"action": "global_action", "global_action": "HOME"}),
    )
    .await;
    assert_eq!(
        phone.current_app().await.unwrap().package,
        "com.google.android.apps.nexuslauncher"
    );
    act_ok(
        &app,
        json!({"action": "global_action", "global_action": "RECENTS"}),
    )
    .await;
    let xml = phone.hierarchy().await.unwrap();
    assert!(xml.contains("Contacts"), "recents lists the app: {xml}");
    act_ok(
        &app,
        json!({"action": "global_action", "global_action": "back"}),
    )
    .await;
    let r = act_ok(
        &app,
        json!({"action": "global_action", "global_action": "POWER"}),
    )
    .await;
    assert_eq!(r["action"], json!({"action": "key", "key": "power"}));
    assert!(
        !phone.screen_state().await.unwrap().awake,
        "POWER turns the screen off"
    );
    act_ok(
        &app,
        json!({"action": "global_action", "global_action": "POWER"}),
    )
    .await;
    assert!(phone.screen_state().await.unwrap().awake, "and on again");

    // Seed 004's scroll and wait shapes.
    act_ok(&app, json!({"action": "scroll", "direction": "down"})).await;
    let r = act_ok(&app, json!({"action": "wait", "duration": 500})).await;
    assert_eq!(r["detail"]["waited_ms"], 500);
}

#[tokio::test]
async fn unknown_fields_are_refused_by_name_on_the_endpoint_and_in_replay_lists() {
    let (app, _phone) = app_with_phone().await;
    let (status, code, msg, _) = error_of(
        app.post_json(ACT, &json!({"action": "tap", "element": 3, "bogus": 1}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_action"));
    assert!(msg.contains("unknown field `bogus`"), "{msg}");
    let (status, _, msg, _) = error_of(
        app.post_json(ACT, &json!({"action": "type", "text": "x", "elment_id": 1}))
            .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(msg.contains("(did you mean `element_id`?)"), "{msg}");

    let (status, code, msg, hint) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "replay", "actions": [
                {"action": "home"},
                {"action": "tap", "selector": "#a", "bogus": true}]}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"));
    assert!(
        msg.starts_with("agent.actions[1]: `tap` has unknown field `bogus`"),
        "{msg}"
    );
    assert!(hint.contains("docs/api.md \"Actions\""), "{hint}");
    // Nothing was queued.
    let tasks: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(tasks["tasks"], json!([]), "{tasks}");
}

#[tokio::test]
async fn pixel_targets_are_checked_against_the_screen_size() {
    let (app, _phone) = app_with_phone().await;
    let r = act_ok(&app, json!({"action": "tap", "pixel": [270, 600]})).await;
    assert_eq!(r["detail"]["point"], json!([270, 600]));
    assert_eq!(r["action"], json!({"action": "tap", "pixel": [270, 600]}));
    act_ok(&app, json!({"action": "tap", "pixel": [539, 1199]})).await;

    for (pixel, shown) in [([540, 600], "[540, 600]"), ([10, 1200], "[10, 1200]")] {
        let (status, code, msg, hint) = error_of(
            app.post_json(ACT, &json!({"action": "tap", "pixel": pixel}))
                .await,
        )
        .await;
        assert_eq!((status, code.as_str()), (422, "invalid_target"));
        assert_eq!(
            msg,
            format!("`pixel` {shown} is outside the 540×1200 screen")
        );
        assert!(hint.contains("0 ≤ x < 540 and 0 ≤ y < 1200"), "{hint}");
    }
    // A person sending pixels as `coordinate` is told which field, and nothing about agents.
    let (status, code, msg, hint) = error_of(
        app.post_json(ACT, &json!({"action": "tap", "coordinate": [540, 1200]}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_coordinate"));
    assert!(!msg.contains("Agent"), "{msg}");
    assert!(
        msg.starts_with("`tap` field `coordinate` is invalid"),
        "{msg}"
    );
    assert!(hint.contains("`pixel`"), "{hint}");
}

#[tokio::test]
async fn caller_mistakes_are_422_naming_the_field_not_502() {
    let (app, phone) = app_with_phone().await;
    for (action, field) in [
        (
            json!({"action": "open_url", "url": "javascript:alert(1)"}),
            "url",
        ),
        (
            json!({"action": "open_url", "url": "file:///sdcard/a.db"}),
            "url",
        ),
        (
            json!({"action": "launch_app", "package": "com.evil; reboot"}),
            "package",
        ),
        (
            json!({"action": "launch_app", "app": "com.evil; reboot"}),
            "app",
        ),
        (
            json!({"action": "launch_app", "label": "$(reboot)"}),
            "label",
        ),
    ] {
        let (status, code, msg, _) = error_of(app.post_json(ACT, &action).await).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_action"),
            "{action}: {msg}"
        );
        assert!(
            msg.contains(&format!("field `{field}` is invalid")),
            "{msg}"
        );
    }
    // Well-formed but not on this phone: still the caller's to fix, so 4xx.
    let (status, code, msg, _) = error_of(
        app.post_json(ACT, &json!({"action": "launch_app", "label": "Spotify"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "app_not_found"), "{msg}");
    let (status, code, _, _) = error_of(
        app.post_json(ACT, &json!({"action": "open_url", "url": "tel:+15551234"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_input"));
    // None of it moved the phone off the launcher.
    assert_eq!(
        phone.current_app().await.unwrap().package,
        "com.google.android.apps.nexuslauncher"
    );
}

#[tokio::test]
async fn a_malformed_selector_is_invalid_selector_with_a_caret_under_the_fault() {
    let (app, _phone) = app_with_phone().await;
    for (action, sel, at) in [
        (
            json!({"action": "tap", "selector": ":text(\"Settings"}),
            ":text(\"Settings",
            '"',
        ),
        (
            json!({"action": "tap", "selector": ":txt(\"Settings\")"}),
            ":txt(\"Settings\")",
            't',
        ),
        (
            json!({"action": "wait_for", "selector": "#a b", "timeout_ms": 100}),
            "#a b",
            'b',
        ),
    ] {
        let r = app.post_json(ACT, &action).await;
        assert_eq!(r.status(), 422);
        let v: Value = r.json().await.unwrap();
        let e = &v["error"];
        assert_eq!(e["code"], "invalid_selector", "{v}");
        assert_eq!(e["error_type"], "invalid_selector");
        assert_eq!(e["selector"], sel);
        let msg = e["message"].as_str().unwrap();
        let hint = e["hint"].as_str().unwrap();
        let lines: Vec<&str> = hint.lines().collect();
        assert_eq!(lines[0], sel, "{hint}");
        let caret = lines[1].find('^').unwrap();
        assert_eq!(sel.chars().nth(caret), Some(at), "{hint}");
        assert!(msg.contains(&format!("column {}", caret + 1)), "{msg}");
    }
    // In a replay list it is refused at submission, naming the action and field.
    let (status, code, msg, hint) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "replay", "actions": [
                {"action": "home"},
                {"action": "scroll", "direction": "down", "container": "#list x"}]}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"));
    assert!(
        msg.starts_with("agent.actions[1].container: invalid selector `#list x` at column 7"),
        "{msg}"
    );
    assert!(hint.starts_with("#list x\n      ^ "), "{hint}");
}

#[tokio::test]
async fn screen_state_comes_only_when_asked_for() {
    let (app, _phone) = app_with_phone().await;
    let missing = json!({"action": "tap", "selector": "#no_such_thing"});
    let r = app.post_json(ACT, &missing).await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["error_type"], "element_not_found");
    assert!(v["error"].get("screen_state").is_none(), "{v}");
    let small = v.to_string().len();

    let r = app
        .post_json(&format!("{ACT}?include=screen_state"), &missing)
        .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["screen_state"]["actionable_elements"].is_array(),
        "{v}"
    );
    assert!(v.to_string().len() > small + 1000);

    let (status, code, msg, hint) = error_of(
        app.post_json(&format!("{ACT}?include=screen_sate"), &missing)
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));
    assert!(
        msg.contains("`screen_sate`") && msg.contains("did you mean `screen_state`?"),
        "{msg}"
    );
    assert!(hint.contains("screen_state"), "{hint}");
    let (status, _, msg, _) = error_of(
        app.post_json(&format!("{ACT}?includes=screen_state"), &missing)
            .await,
    )
    .await;
    assert_eq!(status, 400, "{msg}");
    assert!(msg.contains("includes"), "{msg}");
}

/// Typing nothing and a swipe of 0 ms are refused where actions are read: on the device
/// endpoint and in a task's replay list, 422 in the one error shape, the hint saying
/// what to send instead.
#[tokio::test]
async fn empty_typed_text_and_zero_ms_swipes_are_refused_with_a_hint() {
    let (app, _phone) = app_with_phone().await;
    for (action, field, hint) in [
        (json!({"action": "type", "text": ""}), "text", "clear"),
        (
            json!({"action": "swipe", "direction": "up", "duration_ms": 0}),
            "duration_ms",
            "at least 1",
        ),
        (
            json!({"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2], "duration": 0}),
            "duration",
            "at least 1",
        ),
    ] {
        let (status, code, msg, h) = error_of(app.post_json(ACT, &action).await).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_action"),
            "{action}: {msg}"
        );
        assert!(
            msg.contains(&format!("field `{field}` is invalid")),
            "{msg}"
        );
        assert!(h.contains(hint), "{action}: {h}");
        let task = json!({"instruction": "x", "agent": {"kind": "replay", "actions": [action]}});
        let (status, _, msg, _) = error_of(app.post_json("/v1/tasks", &task).await).await;
        assert_eq!(status, 422, "{msg}");
        assert!(msg.contains(&format!("`{field}`")), "{msg}");
    }
    // A space is text, and a swipe of 1 ms is a gesture.
    act_ok(&app, json!({"action": "type", "text": " "})).await;
    act_ok(
        &app,
        json!({"action": "swipe", "direction": "up", "duration_ms": 1}),
    )
    .await;
}

/// The screen in seed 001's tree format over REST: text, one line per node with its
/// index path, class, label, id and flags; an unknown format is refused by name.
#[tokio::test]
async fn the_screen_comes_as_the_tree_format_on_request() {
    let (app, _phone) = app_with_phone().await;
    let r = app.get("/v1/devices/sim-1/screen?format=tree").await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = r.text().await.unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("{clickable"))
        .unwrap_or_else(|| panic!("a clickable node: {text}"));
    assert!(
        line.trim_start().starts_with("[0"),
        "index path first: {line}"
    );
    let json: Value = app
        .get("/v1/devices/sim-1/screen?format=json")
        .await
        .json()
        .await
        .unwrap();
    assert!(
        json["actionable_elements"].is_array(),
        "json stays the default shape"
    );
    let (status, _, msg, _) = error_of(app.get("/v1/devices/sim-1/screen?format=xml").await).await;
    assert_eq!(status, 400, "{msg}");
    assert!(msg.contains("xml") || msg.contains("format"), "{msg}");
}
