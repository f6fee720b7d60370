//! Several real `droidpilot serve` processes on one PostgreSQL database (issue 16).
//! Without DROIDPILOT_TEST_POSTGRES_URL each test skips loudly; with
//! DROIDPILOT_REQUIRE_POSTGRES=1 it fails instead.

#[path = "../common/mod.rs"]
mod common;

mod events;
