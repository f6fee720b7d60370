//! The workspaces view in a real browser: `workspaces.cjs` drives the Debian Chromium with
//! Playwright (as `browser.rs` does) against a server with a stored workspace of two
//! versions, in `#/workspaces` and `#/workspaces/<id>` (the versions, a per-file diff).
//! Screenshots go to `target/dashboard-screens/`.

use crate::browser::{browser, run_scenarios};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_compares_two_versions_of_a_workspace_in_chromium() {
    let Some(b) = browser() else { return };
    let app = crate::spawn().await;
    run_scenarios(
        &b,
        &app.url("/"),
        "workspaces.cjs",
        &[],
        std::time::Duration::from_secs(120),
        "the workspace scenarios",
        3,
    )
    .await;
    app.stop().await;
}
