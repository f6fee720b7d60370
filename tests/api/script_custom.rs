//! The operator's custom actions in scripts, over the API on the virtual phone: a task
//! whose agent ran one (the navigator's `custom_action` tool) records into a script with
//! a `custom` step, its secret parameter a secret input that nothing stores, and the
//! script replays it through the runner's executor with its `expect` checked; a script,
//! a replay list or an inline script naming an action the server lacks, a parameter the
//! action does not declare, or a secret's value is refused naming the step; a replay
//! after SIGHUP edited the action runs the new definition and records its hash; the
//! Maestro export writes the primitives under a comment naming the action, or refuses.

use std::process::Command;
use std::time::Duration;

use droidpilot::device::sim::apps::settings::{ACCOUNT_EMAIL, ACCOUNT_PASSWORD};
use serde_json::{Value, json};
use wiremock::MockServer;

use crate::common::serve::{free_port, get, start};
use crate::common::{NO_DEVICES, TestApp, error_of, spawn_app_with_toml};
use crate::ocr::ToolCalls;
use crate::run::{add_phone, assert_no_file_holds, submit, wait_done};
use crate::scripts::{record, steps};

/// Besides `extend::SIGN_IN`: an action with no parameters.
const DRAG_DOWN: &str = r##"
[[actions.custom]]
name = "drag_down"
steps = [{ action = "swipe", start = [0.5, 0.3], end = [0.5, 0.8] }]
"##;

/// A server with `sign_in` and `drag_down`, no phones of its own, and `models` allowed as base URLs.
async fn app_with_actions(models: &[&MockServer]) -> TestApp {
    let allowed: Vec<String> = models.iter().map(|m| m.uri()).collect();
    let allowed = allowed.join(",");
    let mut env = vec![
        ("DROIDPILOT_RUNNER__SETTLE_TIMEOUT_MS", "300"),
        ("DROIDPILOT_RUNNER__SETTLE_POLL_MS", "10"),
        ("DROIDPILOT_SCHEDULER__POLL_MS", "50"),
    ];
    if !allowed.is_empty() {
        env.push(("DROIDPILOT_AGENT__ALLOWED_BASE_URLS", allowed.as_str()));
    }
    spawn_app_with_toml(
        &format!("{NO_DEVICES}{}{DRAG_DOWN}", crate::extend::SIGN_IN),
        &env,
    )
    .await
}

fn sign_in_step(password: &str) -> Value {
    json!({"action": "custom", "custom": {"name": "sign_in",
        "params": {"email": ACCOUNT_EMAIL, "password": password}}})
}

fn script_of(steps: Value, inputs: Value) -> Value {
    json!({"name": "sign in", "goal": "Sign in", "inputs": inputs, "steps": steps})
}

#[tokio::test]
async fn an_agents_custom_action_records_and_replays_with_its_secret_never_stored() {
    let model = MockServer::start().await;
    let app = app_with_actions(&[&model]).await;
    let rec_phone = add_phone(&app, "rec", None).await;
    let call =
        json!({"name": "sign_in", "args": {"email": ACCOUNT_EMAIL, "password": ACCOUNT_PASSWORD}});
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ToolCalls::new(vec![
            ("custom_action", call),
            ("finish", json!({"success": true})),
        ]))
        .mount(&model)
        .await;
    let agent = json!({"kind": "navigator", "provider": "openai", "model": "gpt-4o",
        "base_url": format!("{}/v1", model.uri())});
    let id = submit(
        &app,
        json!({"instruction": "Sign in", "device_id": "rec", "max_steps": 5, "agent": agent}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        rec_phone.state().settings.account.as_deref(),
        Some(ACCOUNT_EMAIL)
    );

    let script = record(&app, &id).await;
    let step = &script["steps"][0];
    assert_eq!(step["action"], "custom", "{script}");
    assert_eq!(step["custom"]["name"], "sign_in");
    assert_eq!(
        step["custom"]["params"],
        json!({"email": ACCOUNT_EMAIL, "password": "${password}"})
    );
    assert_eq!(script["inputs"], json!({"password": {"secret": true}}));
    let recorded_with = step["custom"]["definition"].as_str().unwrap().to_string();
    assert_eq!(recorded_with.len(), 16, "{step}");
    assert!(
        step["expect"].is_object(),
        "the next screen gives an expect: {step}"
    );

    // Replayed on a fresh phone, the secret given as the run's input.
    let play = add_phone(&app, "play", None).await;
    let sid = script["id"].as_str().unwrap();
    let r = app
        .post_json(
            &format!("/v1/scripts/{sid}/run"),
            &json!({"device_id": "play", "inputs": {"password": ACCOUNT_PASSWORD}}),
        )
        .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let run: Value = r.json().await.unwrap();
    let run_id = run["id"].as_str().unwrap();
    let done = wait_done(&app, run_id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        done["reason"].as_str().unwrap().contains("all verified"),
        "the step's expect verified it: {done}"
    );
    assert_eq!(
        play.state().settings.account.as_deref(),
        Some(ACCOUNT_EMAIL)
    );
    assert_eq!(done["model_calls"], 0);
    let ran = steps(&app, run_id).await;
    let custom = ran
        .iter()
        .find(|s| s["action"]["action"] == "sign_in")
        .expect("the custom action is a step of the replay");
    assert_eq!(custom["action"]["password"], "••••");
    assert_eq!(custom["outcome"]["detail"]["definition"], recorded_with);
    assert_eq!(
        custom["outcome"]["detail"]["steps"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    // Exported as Maestro: the primitives under a comment, the secret a variable.
    let yaml = app
        .get(&format!("/v1/scripts/{sid}/export?format=maestro"))
        .await;
    assert_eq!(yaml.status(), 200);
    let yaml = yaml.text().await.unwrap();
    for line in [
        "# custom action sign_in",
        "tapOn: \"Accounts\"",
        "tapOn: {id: \"password\"}",
        "inputText: \"${password}\"",
        "tapOn: {id: \"sign_in\"}",
    ] {
        assert!(yaml.contains(line), "{line} in\n{yaml}");
    }

    for path in [
        format!("/v1/tasks/{run_id}/steps"),
        format!("/v1/tasks/{run_id}/events"),
        format!("/v1/tasks/{id}/steps"),
        format!("/v1/scripts/{sid}"),
    ] {
        let text = app.get(&path).await.text().await.unwrap();
        assert!(!text.contains(ACCOUNT_PASSWORD), "{path}: {text}");
    }
    let (dir, _tmp) = app.stop().await;
    assert!(assert_no_file_holds(dir, ACCOUNT_PASSWORD) >= 2);
}

#[tokio::test]
async fn a_custom_step_the_server_cannot_run_or_that_holds_a_secret_is_refused_by_name() {
    let app = app_with_actions(&[]).await;
    let secret = json!({"password": {"secret": true}});
    let cases = [
        (
            script_of(
                json!([{"action": "custom", "custom": {"name": "log_in"}}]),
                json!({}),
            ),
            "unknown_custom_action",
            "steps[0].custom.name",
        ),
        (
            script_of(
                json!([{"action": "custom", "custom": {"name": "sign_in",
                    "params": {"email": "a@b.c", "pasword": "${password}"}}}]),
                secret.clone(),
            ),
            "invalid_script",
            "steps[0].custom.params.pasword",
        ),
        (
            script_of(json!([sign_in_step(ACCOUNT_PASSWORD)]), json!({})),
            "secret_in_script",
            "steps[0].custom.params.password",
        ),
        (
            script_of(json!([sign_in_step("${pw}")]), json!({"pw": null})),
            "secret_in_script",
            "steps[0].custom.params.password",
        ),
        (
            script_of(
                json!([{"action": "custom", "selector": "#x", "custom": {"name": "drag_down"}}]),
                json!({}),
            ),
            "invalid_script",
            "steps[0].selector",
        ),
    ];
    for (doc, code, path) in cases {
        let (status, got, message, hint) = error_of(app.post_json("/v1/scripts", &doc).await).await;
        assert_eq!((status, got.as_str()), (422, code), "{message}");
        assert!(message.starts_with(path), "{path}: {message}");
        assert!(!message.contains(ACCOUNT_PASSWORD) && !hint.contains(ACCOUNT_PASSWORD));
        if code == "unknown_custom_action" {
            assert!(
                message.contains("step 1") && message.contains("`log_in`"),
                "{message}"
            );
            assert!(hint.contains("sign_in, drag_down"), "{hint}");
        }
    }
    // The document that names a secret input for the secret parameter is stored.
    let ok = script_of(json!([sign_in_step("${password}")]), secret);
    assert_eq!(app.post_json("/v1/scripts", &ok).await.status(), 201);

    // A task whose inline script or replay list names an unknown action is refused too.
    let inline = json!({"instruction": "x", "agent": {"kind": "script",
        "script": script_of(json!([{"action": "custom", "custom": {"name": "log_in"}}]), json!({}))}});
    let (status, _, message, _) = error_of(app.post_json("/v1/tasks", &inline).await).await;
    assert_eq!(status, 422);
    assert!(message.contains("script.steps[0].custom.name"), "{message}");
    let replay =
        |a: Value| json!({"instruction": "x", "agent": {"kind": "replay", "actions": [a]}});
    let (status, _, message, _) = error_of(
        app.post_json("/v1/tasks", &replay(json!({"action": "log_in"})))
            .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        message.contains("actions[0]") && message.contains("log_in"),
        "{message}"
    );
    let (status, _, message, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &replay(json!({"action": "sign_in", "email": "a", "password": "b"})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "a replay list is stored: no secret in it");
    assert!(message.contains("actions[0].password"), "{message}");
    let r = app
        .post_json("/v1/tasks", &replay(json!({"action": "drag_down"})))
        .await;
    assert_eq!(
        r.status(),
        201,
        "a configured action: {}",
        r.text().await.unwrap()
    );

    // A primitive Maestro cannot say refuses the export, naming the step and action.
    let drag = script_of(
        json!([{"action": "custom", "custom": {"name": "drag_down"}}]),
        json!({}),
    );
    let r: Value = app
        .post_json("/v1/scripts", &drag)
        .await
        .json()
        .await
        .unwrap();
    let export = format!(
        "/v1/scripts/{}/export?format=maestro",
        r["id"].as_str().unwrap()
    );
    let (status, code, message, _) = error_of(app.get(&export).await).await;
    assert_eq!(
        (status, code.as_str()),
        (409, "not_exportable"),
        "{message}"
    );
    assert!(
        message.starts_with("steps[0]") && message.contains("`drag_down`"),
        "{message}"
    );
}

/// `droidpilot serve` in `dir` on `port` with one virtual phone and `actions`.
fn write_config(dir: &std::path::Path, port: u16, actions: &str) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n[devices.adb]\nenabled = false\n\
             [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
             [runner]\nsettle_timeout_ms = 300\nsettle_poll_ms = 10\n{actions}"
        ),
    )
    .unwrap();
}

/// The `open_page` custom action: Home, Settings, the page by its label, then `more`
/// steps (an operator's edit adds some).
fn open_page(more: &str) -> String {
    format!(
        r##"
[[actions.custom]]
name = "open_page"
params = ["page"]
steps = [
  {{ action = "home" }},
  {{ action = "launch_app", package = "com.android.settings" }},
  {{ action = "tap", selector = ':text("${{page}}")' }},{more}
]
"##
    )
}

async fn post(port: u16, path: &str, body: &Value) -> Value {
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap()
}

async fn finished(port: u16, id: &str) -> Value {
    for _ in 0..600 {
        let t = get(port, &format!("/v1/tasks/{id}")).await;
        if !matches!(t["status"].as_str(), Some("queued" | "running")) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not finish");
}

#[tokio::test]
async fn a_replay_after_sighup_edited_the_action_runs_the_new_definition_and_says_so() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    write_config(dir.path(), port, &open_page(""));
    let server = start(dir.path(), port).await;
    let open = json!({"action": "open_page", "page": "Accounts"});
    let task = json!({"instruction": "open Accounts", "device_id": "sim-1",
        "agent": {"kind": "replay", "actions": [open, {"action": "finish", "success": true}]}});
    let t = post(port, "/v1/tasks", &task).await;
    let id = t["id"].as_str().unwrap();
    assert_eq!(finished(port, id).await["status"], "succeeded");
    let script = post(port, "/v1/scripts", &json!({"from_task": id})).await;
    let old = script["steps"][0]["custom"]["definition"].clone();
    assert!(old.is_string(), "{script}");

    // Edited: it also types into the page's e-mail field.
    let edited = open_page(
        r##"
  { action = "type", selector = "#email", text = "edited@example.com" },"##,
    );
    write_config(dir.path(), port, &edited);
    let ok = Command::new("kill")
        .args(["-HUP", &server.0.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -HUP");
    // The reload is in force once a REST call runs the edited action's four steps.
    let mut reloaded = false;
    for _ in 0..100 {
        let r = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/devices/sim-1/actions"))
            .json(&json!({"action": "open_page", "page": "Accounts"}))
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        if v["detail"]["steps"].as_array().map(Vec::len) == Some(4) {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reloaded, "SIGHUP put the edit in force");

    let sid = script["id"].as_str().unwrap();
    let run = post(
        port,
        &format!("/v1/scripts/{sid}/run"),
        &json!({"device_id": "sim-1"}),
    )
    .await;
    let run_id = run["id"].as_str().unwrap();
    let done = finished(port, run_id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let ran = get(port, &format!("/v1/tasks/{run_id}/steps")).await;
    let ran = ran.get("steps").unwrap_or(&ran).as_array().unwrap().clone();
    let step = ran
        .iter()
        .find(|s| s["action"]["action"] == "open_page")
        .expect("the custom step ran");
    let detail = &step["outcome"]["detail"];
    assert_eq!(detail["steps"].as_array().unwrap().len(), 4, "{detail}");
    assert!(
        detail["definition"].is_string() && detail["definition"] != old,
        "{detail}"
    );
}
