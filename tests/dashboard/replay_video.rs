//! The replay MP4 plays in the Debian Chromium: `replay_video.cjs` loads a finished sim
//! task's `replay.mp4` in a `<video>` element, checks its duration and picture size, and
//! seeks to the end without a media error (seeking needs the server's `Range` answers):
//! the video built from the steps, and the phone's own recording (`record_video`).
//! The server here has no token, as a loopback server may, so the element fetches the
//! video itself. Skips or fails without a browser as `browser.rs` does.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::browser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_mp4_plays_and_seeks_in_chromium() {
    let Some(b) = browser() else { return };
    let app =
        crate::common::spawn_app_with_toml("[[devices.sim]]\nserial = \"sim-1\"\n", &[]).await;
    let actions = json!([
        {"action": "tap", "pixel": [270, 600]},
        {"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.3]},
        {"action": "home"}
    ]);
    let body = json!({"instruction": "video", "device_id": "sim-1", "record_video": true,
        "agent": {"kind": "replay", "actions": actions}});
    let r = app.post_json("/v1/tasks", &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut status = Value::Null;
    for _ in 0..300 {
        status = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json::<Value>()
            .await
            .unwrap()["status"]
            .clone();
        if ["succeeded", "failed", "cancelled"].contains(&status.as_str().unwrap_or("")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "succeeded");

    let profile = tempfile::tempdir().expect("a fresh browser profile");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard/replay_video.cjs");
    let run = tokio::process::Command::new(&b.node)
        .arg(&script)
        .env("DROIDPILOT_URL", app.url("/"))
        .env("DROIDPILOT_TASK", &id)
        .env("DROIDPILOT_QUERIES", "width=360,source=recording")
        .env("DROIDPILOT_CHROMIUM", &b.chromium)
        .env("DROIDPILOT_PLAYWRIGHT_CORE", &b.playwright)
        .env("DROIDPILOT_PROFILE", profile.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the video check finishes within 2 minutes")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "ok"),
        "the video did not play ({}):\n{stdout}\n{stderr}",
        out.status
    );
    app.stop().await;
}
