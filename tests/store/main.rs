//! The store, against both backends: every test in `suite` runs once on a fresh SQLite
//! file and once on a fresh PostgreSQL database (`common::pg`), written once. Then the
//! PostgreSQL-only behaviour around it: choosing it by URL and refusing to start on a bad
//! one (`startup`), a server on it end to end (`e2e`), `migrate-store` (`migrate`), and
//! the database going away under a running task (`outage`), and the cluster half
//! (instances, claims, reaping: `cluster`), and `bench runner --store postgres://…` over
//! two instances (`bench`).
//!
//! Without DROIDPILOT_TEST_POSTGRES_URL (`source .ci/postgres`) the PostgreSQL halves skip
//! with a notice, unless DROIDPILOT_REQUIRE_POSTGRES=1 (CI), in which case they fail.

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod cluster;
mod concurrent_open;
mod e2e;
mod migrate;
mod nul;
mod outage;
mod startup;
mod suite;
