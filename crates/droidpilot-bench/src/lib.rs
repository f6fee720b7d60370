//! Measurement code, kept out of the product modules: `droidpilot bench adb` (`adb.rs`,
//! the ADB backend against the raw `adb` CLI) and `droidpilot bench runner` (`runner.rs`,
//! what the agent loop costs on the virtual phone; with `--profile`, `devtime.rs`: device
//! time per step under a real phone's latencies; `subscribers.rs`, its WebSocket
//! subscribers; `rss.rs`, its memory figure) and `droidpilot bench replay` (`replay.rs`,
//! the script drift suite), `droidpilot bench attack` (`attack.rs`, a normal
//! GET's latency while one client tries to exhaust the server), and `droidpilot eval` (`eval/`, agents scored on
//! the sim tasks; `oracle.rs` its rule-driven model server for keyless planned-agent
//! runs), `screenshots.rs` (`droidpilot bench screenshots`: the bytes and image tokens of
//! a step's screenshot before and after its encoding for models), `tokens.rs` (`droidpilot bench tokens`:
//! tokens per model request by agent kind and role, on the eval's tasks), `ocr.rs`
//! (`droidpilot bench ocr`: words the element map holds with and without OCR on the
//! virtual phone's pixel-only pages, and OCR's time per screen), `rule_model.rs` (the replay bench's rule-driven recovery model) and `noop_model.rs`
//! (its recovery model that answers nothing usable). `benches/` runs the
//! same code under criterion.
//!
//! An unpublished crate: nothing in the product depends on it. The binary offers the
//! `droidpilot bench …` and `droidpilot eval` commands through it (operators measure their
//! own phones and machines), so it is built by default, with no second configuration for
//! CI to build and lint. It may use every product layer, and none uses it.

// The application's modules under their usual names (`crate::core::Core`).
use droidpilot_app::{
    agent, config, core, device, domain, llm, run, screen, script, service, store,
};

pub mod adb;
pub mod attack;
pub mod devtime;
pub mod eval;
pub mod flows;
pub mod noop_model;
pub mod ocr;
pub mod oracle;
pub mod phone_time;
pub mod real_drift;
pub mod replay;
pub mod rss;
pub mod rule_model;
pub mod runner;
pub mod screenshots;
pub mod subscribers;
pub mod tokens;
