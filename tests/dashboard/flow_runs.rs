//! The suite-run view in a real browser: `flow_runs.cjs` drives the Debian Chromium with
//! Playwright (as `browser.rs` does) against a server with two virtual phones, runs a
//! workspace of one passing and one failing Maestro flow, and watches it in
//! `#/flow-runs` and `#/flow-runs/<id>`. Screenshots go to `target/dashboard-screens/`.

use crate::TOKEN;
use crate::browser::{browser, run_scenarios};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_follows_a_suite_run_in_chromium() {
    let Some(b) = browser() else { return };
    let app = crate::common::spawn_app_with_toml(
        "[[devices.sim]]\nserial = \"sim-1\"\npace_ms = 300\n\
         [[devices.sim]]\nserial = \"sim-2\"\npace_ms = 300\n",
        &[("DROIDPILOT_SERVER__TOKENS", TOKEN)],
    )
    .await;
    run_scenarios(
        &b,
        &app.url("/"),
        "flow_runs.cjs",
        &[],
        std::time::Duration::from_secs(240),
        "the suite-run scenarios",
        4,
    )
    .await;
    app.stop().await;
}
