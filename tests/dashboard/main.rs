//! The dashboard end to end: its files as served (headers, caching), the WebSocket's
//! token-as-subprotocol auth for browsers, and the page itself driven by Playwright in the
//! Debian Chromium against a real server with `sim-1` (and the suite-run view against
//! one with `sim-1` and `sim-2`).

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod flow_runs;
mod replay_video;
mod serving;
mod workspaces;
mod ws_auth;

/// The token every server in this binary requires.
pub const TOKEN: &str = "dash-test-token-0123456789abcdef";

/// A server with a token and the virtual phone `sim-1`, paced so a task is watchable.
pub async fn spawn() -> common::TestApp {
    common::spawn_app_with_toml(
        "[[devices.sim]]\nserial = \"sim-1\"\npace_ms = 400\n",
        &[("DROIDPILOT_SERVER__TOKENS", TOKEN)],
    )
    .await
}
