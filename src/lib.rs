//! droidpilot: a server for LLM agents that operate Android phones.
//!
//! This package is the product: the binary, its front ends and the facade that tests,
//! benches and examples use. The layers live in the workspace's crates, lowest first:
//! `droidpilot-core` (domain, screen, script, the `Device` trait), `droidpilot-sim` (the
//! virtual phone and the simulated adbd), `droidpilot-store` (SQLite and PostgreSQL),
//! `droidpilot-maestro` (the Maestro flow language, pure),
//! `droidpilot-app` (devices, models, agents, the runner, config, `core`, and `service`,
//! the use cases every front end calls), then the front ends here: `server` (HTTP,
//! WebSocket, SSE, the dashboard) and `mcp::server` (neither imports the other), `serve`
//! (the top: mounts MCP inside HTTP), `cli`, and `bench`. Each layer's modules are
//! re-exported under their usual names, so `droidpilot::domain::Action` and
//! `droidpilot::run::queue` read as one tree. See ARCHITECTURE.md for the map.

pub use droidpilot_app::{
    adbd, agent, apps, cluster, config, core, device, domain, fuzzing, llm, ocr, outbound, run,
    screen, script, service, store, video,
};

pub use droidpilot_bench as bench;
pub use droidpilot_http as server;
/// The Maestro flow language (`droidpilot-maestro`): parser, selectors, `${…}`, workspaces.
pub use droidpilot_maestro as maestro;

pub mod cli;
pub mod mcp;
pub mod serve;
