//! The workspaces view in a real browser: `workspaces.cjs` drives the Debian Chromium with
//! Playwright (as `browser.rs` does) against a server with a stored workspace of two
//! versions, in `#/workspaces` and `#/workspaces/<id>` (the versions, a per-file diff).
//! Screenshots go to `target/dashboard-screens/`.

use std::path::Path;
use std::process::Stdio;

use crate::TOKEN;
use crate::browser::{browser, target_dir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_compares_two_versions_of_a_workspace_in_chromium() {
    let Some(b) = browser() else { return };
    let app = crate::spawn().await;
    let screens = target_dir().join("dashboard-screens");
    std::fs::create_dir_all(&screens).expect("screens dir");
    let profile = tempfile::tempdir().expect("a fresh browser profile");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard/workspaces.cjs");
    let run = tokio::process::Command::new(&b.node)
        .arg(&script)
        .env("DROIDPILOT_URL", app.url("/"))
        .env("DROIDPILOT_TOKEN", TOKEN)
        .env("DROIDPILOT_CHROMIUM", &b.chromium)
        .env("DROIDPILOT_PLAYWRIGHT_CORE", &b.playwright)
        .env("DROIDPILOT_SCREENS", &screens)
        .env("DROIDPILOT_PROFILE", profile.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("the workspace scenarios finish within 2 minutes")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "the workspace scenarios failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for n in 1..=3 {
        assert!(
            stdout.contains(&format!("ok {n} ")),
            "scenario {n} did not report ok:\n{stdout}"
        );
    }
    app.stop().await;
}
