//! droidpilot's MCP server driven by the SDK's own client, over stdio and HTTP.
//!
//! `fixtures/drive.py` runs a scenario with the official Python SDK's `ClientSession` and
//! prints what each tool call returned; these tests assert on it, and on what the REST API
//! shows afterwards (the session task and its steps).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{INSTANT_PHONES, TestApp, spawn_app_on, spawn_app_with_toml};
use crate::sdk;

const TOKEN: &str = "mcp-test-token-0123456789";

/// Runs `drive.py SCENARIO TRANSPORT ARGS...` and parses its JSON report.
fn drive(scenario: &str, transport: &str, args: Vec<String>) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fixtures/drive.py");
    // The stdio transport starts `droidpilot mcp` from the script: it inherits this.
    let out = Command::new(sdk::python())
        .env(INSTANT_PHONES.0, INSTANT_PHONES.1)
        .arg(script)
        .args([scenario, transport])
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "drive.py {scenario} {transport} failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The `droidpilot mcp` command line for a data directory, with adb off (no adb server is
/// started for a test) and the default virtual phone `sim-1`.
fn stdio_command(dir: &Path) -> Vec<String> {
    let config = dir.join("mcp.toml");
    std::fs::write(&config, "[devices.adb]\nenabled = false\n").unwrap();
    vec![
        env!("CARGO_BIN_EXE_droidpilot").to_string(),
        "mcp".into(),
        "--config".into(),
        config.display().to_string(),
        "--data-dir".into(),
        dir.display().to_string(),
    ]
}

/// A server with the default `sim-1` and a bearer token.
async fn http_app() -> TestApp {
    spawn_app_with_toml("", &[("DROIDPILOT_SERVER__TOKENS", TOKEN)]).await
}

fn ok<'a>(report: &'a Value, call: &str) -> &'a Value {
    let r = &report[call];
    assert_eq!(r["is_error"], false, "{call} failed: {r:#}");
    r
}

fn refused<'a>(report: &'a Value, call: &str) -> &'a Value {
    let r = &report[call];
    assert_eq!(
        r["is_error"], true,
        "{call} should have been refused: {r:#}"
    );
    &r["structured"]["error"]
}

/// What every transport must show for the main scenario.
fn assert_main(report: &Value) {
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "list_devices",
        "acquire_device",
        "release_device",
        "read_screen",
        "screenshot",
        "read_element",
        "tap",
        "long_press",
        "type",
        "clear",
        "scroll",
        "scroll_to_find",
        "swipe",
        "wait_for",
        "wait_for_gone",
        "launch_app",
        "back",
        "home",
        "open_url",
        "list_apps",
        "run_task",
        "get_task",
        "answer_task",
        "cancel_task",
        "run_script",
    ] {
        assert!(tools.contains(&t), "tool {t} is listed: {tools:?}");
    }
    let props = &report["tap_schema"]["properties"];
    for f in ["device_id", "selector", "element", "coordinate"] {
        assert!(props.get(f).is_some(), "tap takes {f}: {props}");
    }
    let devices = &ok(report, "list_devices")["structured"]["devices"];
    assert!(
        devices
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == "sim-1")
    );
    assert_eq!(ok(report, "acquire")["structured"]["device_id"], "sim-1");
    ok(report, "home");
    let before = ok(report, "screen_before");
    assert!(
        before["text"].as_str().unwrap().contains("Settings"),
        "{before:#}"
    );
    let tap = &ok(report, "tap")["structured"];
    assert!(
        tap["duration_ms"].is_u64(),
        "an action tool's result says how long it took: {tap:#}"
    );
    let after = &ok(report, "screen_after")["structured"];
    assert_eq!(
        after["app_package"], "com.android.settings",
        "Settings opened: {after:#}"
    );
    let found = &ok(report, "find")["structured"];
    assert_eq!(found["found"], true, "{found:#}");
    let label = found["element"]["text"].as_str().unwrap_or_default();
    assert!(label.contains("About phone"), "{found:#}");
    let nf = refused(report, "not_found");
    assert_eq!(nf["code"], "element_not_found", "{nf}");
    assert!(
        nf["message"].as_str().unwrap().contains("No such row"),
        "{nf}"
    );
    let shot = ok(report, "screenshot");
    assert_eq!(shot["images"], json!(["image/jpeg"]));
    // The picture's size and scale, beside the screen's: a point read off it converts
    // to the full-size pixels tap's `pixel` takes.
    let size = &shot["structured"];
    assert_eq!(size["scale"], 0.5, "{shot:#}");
    assert_eq!(
        size["width"].as_u64().unwrap() * 2,
        size["screen"]["width"].as_u64().unwrap()
    );
    assert!(
        shot["text"].as_str().unwrap().contains("divide"),
        "{shot:#}"
    );
    let bad = refused(report, "bad_field");
    assert!(
        bad["message"].as_str().unwrap().contains("`selectr`")
            && bad["message"]
                .as_str()
                .unwrap()
                .contains("did you mean `selector`"),
        "the unknown field is named with a suggestion: {bad}"
    );
    assert!(!bad["hint"].as_str().unwrap().is_empty());
    let missing = refused(report, "missing_device");
    assert!(
        missing["message"].as_str().unwrap().contains("device_id"),
        "{missing}"
    );
    ok(report, "release");
    let foreign = refused(report, "foreign_base_url");
    assert_eq!(foreign["code"], "invalid_agent", "{foreign}");
    assert!(
        foreign["message"]
            .as_str()
            .unwrap()
            .starts_with("agent.base_url:"),
        "{foreign}"
    );
    let hook = refused(report, "internal_webhook");
    assert_eq!(hook["code"], "webhook_host_refused", "{hook}");
    let run = &ok(report, "run_task")["structured"];
    assert_eq!(run["task"]["status"], "succeeded", "{run:#}");
    assert_eq!(run["result"]["status"], "success", "{run:#}");
    let progress = report["progress"].as_array().unwrap();
    assert!(
        progress
            .iter()
            .any(|p| p.as_str().unwrap_or("").starts_with("step 1: launch_app")),
        "progress notifications name the steps: {progress:?}"
    );
}

/// The session task holds the actions (home, tap) as steps, and ended with the session.
async fn assert_session_task(app: &TestApp, report: &Value) {
    let task = report["acquire"]["structured"]["session_task"]
        .as_str()
        .unwrap();
    let steps: Value = app
        .client
        .get(app.url(&format!("/v1/tasks/{task}/steps")))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let actions: Vec<&Value> = steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["action"])
        .collect();
    // home, tap, then any scrolls scroll_to_find took.
    assert!(actions.len() >= 2, "home and tap recorded: {steps:#}");
    assert!(
        actions[2..].iter().all(|a| a["action"] == "scroll"),
        "{steps:#}"
    );
    // `home` is recorded in its canonical form.
    assert_eq!(*actions[0], json!({"action": "key", "key": "home"}));
    assert_eq!(actions[1]["action"], "tap");
    assert_eq!(actions[1]["selector"], ":text(\"Settings\")");
    assert!(
        steps[1]["screenshot"].is_string(),
        "the screen acted on is kept"
    );
    let t: Value = app
        .client
        .get(app.url(&format!("/v1/tasks/{task}")))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        t["status"], "succeeded",
        "released: the session task ended: {t:#}"
    );
    // The task list shows what it is: an MCP session, not a replay.
    let list: Value = app
        .client
        .get(app.url("/v1/tasks"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == task)
        .unwrap();
    assert_eq!(row["agent"]["kind"], "mcp_session", "{row:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_session_drives_the_virtual_phone_and_runs_a_task() {
    if !sdk::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cmd = stdio_command(dir.path());
    let report = tokio::task::spawn_blocking(move || drive("main", "stdio", cmd))
        .await
        .unwrap();
    assert_main(&report);
    // The process is gone; a server on the same files shows what the session did.
    let app = spawn_app_on(dir.path(), &[("DROIDPILOT_SERVER__TOKENS", TOKEN)]).await;
    assert_session_task(&app, &report).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_session_drives_the_virtual_phone_and_runs_a_task() {
    if !sdk::available() {
        return;
    }
    let app = http_app().await;
    let url = app.url("/mcp");
    let report =
        tokio::task::spawn_blocking(move || drive("main", "http", vec![url, TOKEN.into()]))
            .await
            .unwrap();
    assert_main(&report);
    assert_session_task(&app, &report).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_sessions_contending_for_one_phone_one_is_refused_naming_the_holder() {
    if !sdk::available() {
        return;
    }
    let app = http_app().await;
    let url = app.url("/mcp");
    let r = tokio::task::spawn_blocking(move || drive("contend", "http", vec![url, TOKEN.into()]))
        .await
        .unwrap();
    ok(&r, "a_acquire");
    for call in ["b_tap", "b_acquire"] {
        let e = refused(&r, call);
        assert_eq!(e["code"], "device_busy", "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains("sim-1") && m.contains("MCP session") && m.contains("(agent-a)"),
            "{m}"
        );
    }
    // Reading needs no lease: B sees the phone A holds.
    assert!(
        ok(&r, "b_read")["text"]
            .as_str()
            .unwrap()
            .contains("Actionable elements")
    );
    let devices = &ok(&r, "b_list")["structured"]["devices"];
    let sim = devices
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "sim-1")
        .unwrap();
    assert!(
        sim["held_by"].as_str().unwrap().contains("agent-a"),
        "{sim}"
    );
    assert_eq!(sim["held_by_you"], false);
    ok(&r, "a_release");
    ok(&r, "b_after_release");
    // B's session closed with the phone held: the lease went with it.
    ok(&r, "c_after_close");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_action_on_a_phone_a_running_task_holds_is_refused_naming_the_task() {
    if !sdk::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cmd = stdio_command(dir.path());
    let r = tokio::task::spawn_blocking(move || drive("contend", "stdio", cmd))
        .await
        .unwrap();
    let task = ok(&r, "submit")["structured"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        ok(&r, "waiting")["structured"]["task"]["status"],
        "waiting_for_user"
    );
    let e = refused(&r, "tap_while_running");
    assert_eq!(e["code"], "device_busy");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("running task {task}")),
        "{e}"
    );
    ok(&r, "answer");
    assert_eq!(
        ok(&r, "finished")["structured"]["task"]["status"],
        "succeeded"
    );
}

#[tokio::test]
async fn http_mcp_without_the_token_is_401_in_the_error_shape() {
    let app = http_app().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    let resp = app
        .client
        .post(app.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, code, _, hint) = crate::common::error_of(resp).await;
    assert_eq!((status, code.as_str()), (401, "unauthorized"));
    assert!(hint.contains("Bearer"), "{hint}");
    app.stop().await;
}

/// Closing a session with `DELETE /mcp` answers 204, which the official SDKs accept
/// without logging a failed termination (they warn on rmcp's 202).
#[tokio::test]
async fn closing_an_http_session_answers_no_content() {
    let app = http_app().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    let resp = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let closed = app
        .client
        .delete(app.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    app.stop().await;
}
