//! Measurement code, kept out of the product modules: `droidpilot bench adb` (`adb.rs`,
//! the ADB backend against the raw `adb` CLI) and `droidpilot bench runner` (`runner.rs`,
//! what the agent loop costs on the virtual phone; with `--profile`, `devtime.rs`: device
//! time per step under a real phone's latencies; `subscribers.rs`, its WebSocket
//! subscribers; `rss.rs`, its memory figure) and `droidpilot bench replay` (`replay.rs`,
//! the script drift suite of issue 12), `droidpilot bench attack` (`attack.rs`, a normal
//! GET's latency while one client tries to exhaust the server), and `droidpilot eval` (`eval/`, agents scored on
//! the sim tasks; `oracle.rs` its rule-driven model server for keyless planned-agent
//! runs), and `rule_model.rs` (the replay bench's recovery model). `benches/` runs the
//! same code under criterion.
//!
//! A module rather than a cargo feature: the `droidpilot bench …` commands ship in the
//! default build (operators measure their own phones and machines), and a feature would
//! add a second configuration for CI to build and lint for a few hundred KB of code.
//! This is the top layer beside `cli`: it may use every product layer, and none uses it.

pub mod adb;
pub mod attack;
pub mod devtime;
pub mod eval;
pub mod oracle;
pub mod replay;
pub mod rss;
pub mod rule_model;
pub mod runner;
pub mod subscribers;
