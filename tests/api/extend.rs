//! The operator's `[actions]` over REST: a custom action sent to
//! `POST /v1/devices/{id}/actions` runs its primitives on the virtual phone and never
//! echoes a secret; its caller's mistakes are 422s naming the argument; `[devices]
//! transform` moves a REST tap; and SIGHUP puts an edited `[actions]` in force on the
//! running binary.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use droidpilot::device::sim::apps::settings::{ACCOUNT_EMAIL, ACCOUNT_PASSWORD};
use droidpilot::device::sim::{SimConfig, SimDevice};
use serde_json::{Value, json};

use crate::common::serve::{free_port, start};
use crate::common::{NO_DEVICES, TestApp, error_of, spawn_app_with_toml};

const ACT: &str = "/v1/devices/sim-1/actions";

/// The `sign_in` custom action: Settings' account form, the password a secret parameter.
pub(crate) const SIGN_IN: &str = r##"
[[actions.custom]]
name = "sign_in"
params = ["email", { name = "password", secret = true }]
steps = [
  { action = "launch_app", package = "com.android.settings" },
  { action = "tap", selector = ':text("Accounts")' },
  { action = "type", selector = "#email", text = "${email}" },
  { action = "type", selector = "#password", text = "${password}" },
  { action = "tap", selector = "#sign_in" },
]
"##;

async fn app_with(toml: &str) -> (TestApp, Arc<SimDevice>) {
    let app = spawn_app_with_toml(toml, &[]).await;
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

#[tokio::test]
async fn a_configured_custom_action_runs_over_rest_without_echoing_its_secret() {
    let (app, phone) = app_with(&format!("{NO_DEVICES}{SIGN_IN}")).await;
    let body = json!({"action": "sign_in", "email": ACCOUNT_EMAIL, "password": ACCOUNT_PASSWORD});
    let r = app.post_json(ACT, &body).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(!text.contains(ACCOUNT_PASSWORD), "{text}");
    let got: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(got["action"]["password"], "••••");
    assert_eq!(got["detail"]["steps"].as_array().unwrap().len(), 5);
    assert_eq!(
        phone.state().settings.account.as_deref(),
        Some(ACCOUNT_EMAIL)
    );

    let typo = json!({"action": "sign_in", "email": "a@b.c", "pasword": "x"});
    let (status, code, message, hint) = error_of(app.post_json(ACT, &typo).await).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "invalid_action"),
        "{message}"
    );
    assert!(
        message.contains("`pasword`") && hint.contains("(email, password)"),
        "{message} {hint}"
    );
    let missing = json!({"action": "sign_in", "email": "a@b.c"});
    let (status, _, message, _) = error_of(app.post_json(ACT, &missing).await).await;
    assert_eq!(status, 422);
    assert!(message.contains("needs `password`"), "{message}");
}

#[tokio::test]
async fn a_rest_tap_goes_through_the_configured_transform() {
    let toml = format!("{NO_DEVICES}transform = {{ offset_y = 0.1 }}\n");
    let (app, _phone) = app_with(&toml).await;
    let coordinate = json!({"action": "tap", "coordinate": [0.5, 0.5]});
    let r: Value = app.post_json(ACT, &coordinate).await.json().await.unwrap();
    assert_eq!(r["detail"]["point"], json!([270, 720]), "{r}");
    let pixel = json!({"action": "tap", "pixel": [270, 300]});
    let r: Value = app.post_json(ACT, &pixel).await.json().await.unwrap();
    assert_eq!(r["detail"]["point"], json!([270, 420]), "{r}");
}

/// `droidpilot serve` in `dir` on `port`, with `extra` in its local.toml.
fn write_config(dir: &std::path::Path, port: u16, extra: &str) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n[devices.adb]\nenabled = false\n\
             [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n{extra}"
        ),
    )
    .unwrap();
}

async fn act(port: u16, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}{ACT}"))
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn sighup_puts_an_edited_actions_table_in_force_and_a_broken_one_changes_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    write_config(dir.path(), port, "");
    let server = start(dir.path(), port).await;
    let body = json!({"action": "go_home"});
    assert_eq!(act(port, &body).await.0, 422, "not defined yet");

    let go_home = "[[actions.custom]]\nname = \"go_home\"\nsteps = [{ action = \"home\" }]\n";
    write_config(dir.path(), port, go_home);
    let hup = |pid: u32| {
        let ok = Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -HUP");
    };
    hup(server.0.id());
    let mut status = 0;
    for _ in 0..100 {
        status = act(port, &body).await.0;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200, "the reloaded action runs");

    // A table that does not load keeps the one in force.
    write_config(
        dir.path(),
        port,
        "[[actions.custom]]\nname = \"tap\"\nsteps = []\n",
    );
    hup(server.0.id());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, got) = act(port, &body).await;
    assert_eq!(status, 200, "{got}");
}
