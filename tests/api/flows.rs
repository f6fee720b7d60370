//! Maestro flows run as tasks (`agent: {kind: "flow"}`) on the virtual phone, each
//! showing droidpilot does what Maestro does: selectors (regex, case, content
//! description, index, relative), waits, control flow, `${…}`, text input, screenshots,
//! and refusals at submission that name the line.

use serde_json::{Value, json};

use crate::common::{TestApp, error_of};
use crate::run::{add_phone, bare_app, submit, wait_done};
use crate::scripts::steps;

/// Runs `flow` (YAML text) on a fresh phone `p` with `env` as `-e` values.
async fn run_flow(app: &TestApp, flow: &str, env: Value) -> Value {
    let id = submit(
        app,
        json!({"instruction": "run the flow", "device_id": "p", "max_steps": 80,
               "agent": {"kind": "flow", "flow": flow, "env": env}}),
    )
    .await;
    wait_done(app, &id).await
}

/// Every step's reasoning, one string.
async fn reasoning(app: &TestApp, task: &Value) -> String {
    let id = task["id"].as_str().unwrap();
    steps(app, id)
        .await
        .iter()
        .map(|s| s["thinking"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` is a regular expression over the whole text, case-insensitive; `index` counts
/// from the top; `below` takes the nearest element under another.
#[tokio::test]
async fn selectors_match_as_maestro_does_regex_case_index_and_below() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.settings
---
- launchApp
- assertVisible: "wi-fi"
- assertVisible: ".*Fi"
- assertNotVisible: "Fi"
- tapOn:
    id: "switch_widget"
    index: 1
- assertVisible:
    text: "On"
    below: "Bluetooth"
"#;
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        phone.state().settings.bluetooth,
        "index 1 is the second switch: Bluetooth"
    );
    assert!(
        phone.state().settings.wifi,
        "the first switch (Wi-Fi) untouched"
    );
    let why = reasoning(&app, &done).await;
    assert!(
        why.contains("flow.yaml line 7 (tapOn id \"switch_widget\""),
        "{why}"
    );
}

/// `assertNotVisible` with a regex fails while a match is on screen (it passed before,
/// when a flow was imported as a script), and the failure names the line; the task is
/// not completed.
#[tokio::test]
async fn assert_not_visible_with_a_regex_fails_naming_file_and_line() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", None).await;
    let flow = "appId: com.android.settings\n---\n- launchApp\n- assertNotVisible: \".*Wi-Fi.*\"\n- back\n";
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("flow.yaml line 4 (assertNotVisible text \".*Wi-Fi.*\")"),
        "{reason}"
    );
    assert!(reason.contains("is still visible"), "{reason}");
}

/// `text` matches a content description ("Create contact" is the + button's), `${…}`
/// reads `-e` values, `inputText` types into the focused field, `eraseText` empties it
/// and `hideKeyboard` closes the keyboard.
#[tokio::test]
async fn text_matches_a_description_and_input_then_erase_work() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.contacts
env:
  FIRST: ${FIRST || 'Nobody'}
---
- launchApp
- tapOn: "Create contact"
- tapOn:
    id: name_edit
- inputText: "${FIRST} ${SURNAME}"
- assertVisible: "ana lima"
- eraseText
- assertNotVisible: "Ana Lima"
- inputText: "Bea"
- hideKeyboard
- assertVisible: "Bea"
"#;
    let done = run_flow(&app, flow, json!({"FIRST": "Ana", "SURNAME": "Lima"})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let st = phone.state();
    assert!(!st.keyboard, "hideKeyboard closed it");
    let why = reasoning(&app, &done).await;
    assert!(why.contains("line 9 (inputText"), "{why}");
}

/// `repeat` with `while` over `output`, `retryTapIfNoChange: false` tapping exactly
/// once per turn, `runFlow` with `when: visible`, and `assertTrue`.
#[tokio::test]
async fn repeat_while_and_run_flow_when_follow_the_screen_and_output() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.settings
---
- launchApp
- scrollUntilVisible:
    element: "About phone"
- tapOn: "About phone"
- evalScript: ${output.taps = 0}
- repeat:
    while:
      true: ${output.taps < 7}
    commands:
      - tapOn:
          text: "Build number"
          retryTapIfNoChange: false
      - evalScript: ${output.taps = output.taps + 1}
- back
- runFlow:
    when:
      visible: "About phone"
    commands:
      - evalScript: ${output.seen = 'yes'}
- runFlow:
    when:
      visible: "Not on this screen"
    commands:
      - evalScript: ${output.seen = 'wrong'}
- assertTrue: ${output.seen == 'yes'}
"#;
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let st = phone.state();
    assert_eq!(st.settings.build_taps, 7, "seven taps, no retry tap");
    assert!(st.settings.developer_options);
}

/// A command that cannot run here is refused at submission with its line, never
/// skipped at run time.
#[tokio::test]
async fn unsupported_commands_are_refused_at_submission_naming_the_line() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", None).await;
    let post = |agent: Value| {
        let app = &app;
        async move {
            let r = app
                .post_json("/v1/tasks", &json!({"instruction": "x", "agent": agent}))
                .await;
            error_of(r).await
        }
    };
    let flow = "appId: com.android.settings\n---\n- launchApp\n- setLocation:\n    latitude: 1\n    longitude: 2\n";
    let (status, code, msg, hint) = post(json!({"kind": "flow", "flow": flow})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"), "{msg}");
    assert!(
        msg.contains("agent.flow: flow.yaml line 4: `setLocation / travel` cannot run here"),
        "{msg}"
    );
    assert!(hint.contains("nothing is skipped silently"), "{hint}");
    let (status, _, msg, hint) =
        post(json!({"kind": "flow", "flow": "appId: a\n---\n- runFlow: other.yaml\n"})).await;
    assert_eq!(status, 422);
    assert!(
        msg.contains("line 3") && msg.contains("other.yaml"),
        "{msg}"
    );
    assert!(hint.contains("`files`"), "{hint}");
    let (status, _, msg, _) =
        post(json!({"kind": "flow", "flow": "appId: a\n---\n- tapOnn: x\n"})).await;
    assert_eq!(status, 422);
    assert!(msg.contains("line 3"), "{msg}");
    let (status, _, msg, _) = post(json!({"kind": "navigator", "flow": "x"})).await;
    assert_eq!(status, 422);
    assert!(msg.contains("agent.flow: is for flow agents only"), "{msg}");
}

/// A workspace as files: `runFlow` of another file with `env`, `onFlowStart` and
/// `onFlowComplete`, an `optional` command that fails as a warning, and
/// `takeScreenshot`'s step keeping its screenshot.
#[tokio::test]
async fn a_workspace_runs_sub_flows_hooks_optional_and_screenshots() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let main = r#"appId: com.android.settings
onFlowStart:
  - evalScript: ${output.started = 'yes'}
onFlowComplete:
  - evalScript: ${output.done = output.started}
---
- runFlow:
    file: common/open.yaml
    env:
      WHICH: Bluetooth
- tapOn:
    text: "Nowhere to be found"
    optional: true
- takeScreenshot: after
- assertTrue: ${output.started == 'yes'}
"#;
    let open = "appId: com.android.settings\n---\n- launchApp\n- tapOn: ${WHICH}\n";
    let id = submit(
        &app,
        json!({"instruction": "ws", "device_id": "p", "max_steps": 40,
               "agent": {"kind": "flow", "files": {"main.yaml": main, "common/open.yaml": open},
                         "entry": "main.yaml"}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        phone.state().settings.bluetooth,
        "the sub-flow's tap used its env"
    );
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("optional commands that failed: main.yaml line 11"),
        "{reason}"
    );
    let all = steps(&app, &id).await;
    let shot = all
        .iter()
        .find(|s| {
            s["thinking"]
                .as_str()
                .unwrap_or("")
                .contains("takeScreenshot after")
        })
        .expect("a takeScreenshot step");
    assert!(
        shot["screenshot"].as_str().is_some(),
        "its screenshot is kept: {shot}"
    );
    let r = app
        .get(&format!("/v1/tasks/{id}/steps/{}/screenshot", shot["n"]))
        .await;
    assert_eq!(r.status(), 200);
    let tapped = all.iter().find(|s| {
        s["thinking"]
            .as_str()
            .unwrap_or("")
            .contains("common/open.yaml line 4")
    });
    assert!(
        tapped.is_some(),
        "the sub-flow's step names its own file and line"
    );
}

/// A swipe in each form and `scrollUntilVisible` move the list as Maestro's do.
#[tokio::test]
async fn swipes_and_scroll_until_visible_reach_the_bottom_row() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.settings
---
- launchApp
- swipe:
    direction: UP
- swipe:
    start: 50%, 80%
    end: 50%, 30%
- swipe:
    from:
      text: "Battery"
    direction: DOWN
- scrollUntilVisible:
    element:
      text: "Accounts"
    direction: DOWN
- tapOn: "Accounts"
- assertVisible: "Sign in to sync your settings"
"#;
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let why = reasoning(&app, &done).await;
    assert!(
        why.contains("line 4 (swipe") && why.contains("line 9 (swipe"),
        "{why}"
    );
}

/// The task completes only when the flow ran to its end: a missing element fails it
/// after Maestro's lookup wait, and the steps after it never run.
#[tokio::test]
async fn a_flow_is_never_completed_before_its_end() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = "appId: com.android.settings\n---\n- launchApp\n- tapOn: \"Missing row\"\n- tapOn: Bluetooth\n";
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(reason.contains("flow.yaml line 4 (tapOn text \"Missing row\"): no element matches text \"Missing row\" (waited 17 s)"), "{reason}");
    assert!(!phone.state().settings.bluetooth, "line 5 never ran");
}

/// `launchApp` with `clearState` starts the app as installed (`pm clear`; the virtual
/// phone resets the app's data), and a plain `launchApp` stops it first, as Maestro's
/// `stopApp` default does: the app opens on its first screen.
#[tokio::test]
async fn clear_state_resets_the_app_and_launch_app_starts_afresh() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.contacts
---
- launchApp
- tapOn: "Create contact"
- tapOn:
    id: name_edit
- inputText: "Aaron Quill"
- tapOn:
    id: editor_menu_save_button
- launchApp
- assertVisible: "Create contact"
- assertVisible: "Aaron Quill"
- launchApp:
    clearState: true
- assertVisible: "Create contact"
- assertNotVisible: "Aaron Quill"
"#;
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        phone
            .state()
            .contacts
            .iter()
            .all(|c| c.name != "Aaron Quill"),
        "the contact went with the app's data"
    );
    let why = reasoning(&app, &done).await;
    assert!(why.contains("line 13 (launchApp"), "{why}");
}

/// `launchApp` (with Maestro's default `stopApp`) stops and starts the app in one step and
/// reads the screen once, after the launch, never the launcher in between (nothing decides
/// on it); the launch is still checked: the app is restarted on its first screen, and a
/// flow for an app that is not installed fails naming it. Counted by the phone.
#[tokio::test]
async fn launch_app_reads_the_screen_once_after_the_launch() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = "appId: com.android.settings\n---\n- launchApp\n- tapOn: Bluetooth\n- launchApp\n- assertVisible: Wi-Fi\n";
    let before = phone.counts();
    let done = run_flow(&app, flow, json!({})).await;
    let used = phone.counts().since(&before);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        phone.state().settings.bluetooth,
        "the tap between the launches ran"
    );
    // The task's first look, then the settled screen after each launch and the tap.
    assert_eq!((used.dumps, used.screencaps), (4, 4), "{used:?}");
    let recorded = steps(&app, done["id"].as_str().unwrap()).await;
    let launches = recorded
        .iter()
        .filter(|s| {
            s["thinking"]
                .as_str()
                .is_some_and(|t| t.contains("(launchApp"))
        })
        .count();
    assert_eq!(launches, 2, "one step per launchApp: {recorded:?}");
    let missing = "appId: com.example.missing\n---\n- launchApp\n- assertVisible: Wi-Fi\n";
    let done = run_flow(&app, missing, json!({})).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(reason.contains("com.example.missing"), "{reason}");
}

/// A phone `p` whose lists show a "Syncing…" row above their rows for `ms` of phone time.
async fn slow_phone(app: &TestApp, ms: u64) {
    use droidpilot::device::sim::{SimConfig, SimDevice, SimFaults};
    let cfg = SimConfig {
        serial: "p".into(),
        width: 540,
        height: 1200,
        faults: SimFaults {
            delayed_elements_ms: ms,
            ..Default::default()
        },
        ..Default::default()
    };
    let phone = std::sync::Arc::new(SimDevice::new(cfg).unwrap());
    app.pool.add_device(phone, "sim").await.unwrap();
}

/// Waits re-read the screen in the phone's time: `extendedWaitUntil` gives up at its own
/// timeout (a "Syncing…" row that goes after 5 s is still there after 1 s) and waits
/// out a longer one, and `waitForAnimationToEnd` returns once the screen holds still.
#[tokio::test]
async fn waits_follow_their_timeouts_on_a_slow_page() {
    let app = bare_app(&[]).await;
    slow_phone(&app, 5_000).await;
    let short = "appId: com.android.settings\n---\n- launchApp\n- extendedWaitUntil:\n    notVisible: \"Syncing.*\"\n    timeout: 1000\n";
    let done = run_flow(&app, short, json!({})).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("line 4 (extendedWaitUntil)")
            && reason.contains("is still visible (waited 1 s)"),
        "{reason}"
    );

    let app = bare_app(&[]).await;
    slow_phone(&app, 5_000).await;
    let long = "appId: com.android.settings\n---\n- launchApp\n- waitForAnimationToEnd\n- extendedWaitUntil:\n    notVisible: \"Syncing.*\"\n    timeout: 10000\n- tapOn: \"Wi-Fi\"\n- assertNotVisible: \"HomeNet\"\n";
    let done = run_flow(&app, long, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let id = done["id"].as_str().unwrap();
    let checks: Vec<Value> = steps(&app, id)
        .await
        .into_iter()
        .filter(|s| s["action"]["action"] == "flow_check")
        .collect();
    assert!(
        checks.iter().any(|s| s["action"]["until"] == "not_visible"),
        "the wait was a step of its own: {checks:?}"
    );
}

/// `retry` runs its commands again after a failure (here a condition that holds on the
/// second try); without tries left the failure ends the flow.
#[tokio::test]
async fn retry_reruns_its_commands_until_they_pass() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", None).await;
    let flow = |tries: u32| {
        format!(
            "appId: com.android.settings\n---\n- launchApp\n- evalScript: ${{output.n = 0}}\n- retry:\n    maxRetries: {tries}\n    commands:\n      - evalScript: ${{output.n = output.n + 1}}\n      - assertTrue: ${{output.n >= 3}}\n"
        )
    };
    let done = run_flow(&app, &flow(2), json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let done = run_flow(&app, &flow(1), json!({})).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("line 9 (assertTrue)") && reason.contains("is false"),
        "{reason}"
    );
}

/// `copyTextFrom` reads an element's text into `maestro.copiedText`, `pasteText` types
/// it, `inputRandomNumber` types digits, `pressKey` and `openLink` reach the phone.
#[tokio::test]
async fn copy_paste_random_input_keys_and_links() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let flow = r#"appId: com.android.contacts
---
- launchApp
- tapOn: "Create contact"
- tapOn:
    id: name_edit
- inputText: "Kim"
- copyTextFrom:
    id: name_edit
- assertTrue: ${maestro.copiedText == 'Kim'}
- tapOn:
    id: phone_edit
- pasteText
- inputRandomNumber:
    length: 4
- assertVisible:
    id: phone_edit
    text: "Kim[0-9]{4}"
- pressKey: Home
- openLink: https://example.com/flows
- assertVisible: ".*example.com/flows.*"
"#;
    let done = run_flow(&app, flow, json!({})).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        phone.state().fields["contact.phone"].len(),
        7,
        "Kim + 4 digits"
    );
}
