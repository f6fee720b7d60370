//! droidpilot: a server for LLM agents that operate Android phones.
//!
//! The crate is a library first so that the binary, `tests/` and `benches/` all run the
//! same code. Layers, lowest first (lower layers never import higher ones): `domain`,
//! `screen`, `script` (the script document: pure data over domain and screen), `device`, `adbd`, `store`, `llm`, `agent`, `run`, `core` (the
//! wiring: builds and stops everything once), `service` (the use cases), the front ends
//! `server` (HTTP) and `mcp::server` (neither imports the other), `serve` (mounts MCP in
//! HTTP), then `bench` and `cli` (`config` is read from `core` up).
//! See ARCHITECTURE.md for the map.

pub mod adbd;
pub mod agent;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod core;
pub mod device;
pub mod domain;
pub mod fuzzing;
pub mod llm;
pub mod mcp;
pub mod outbound;
pub mod run;
pub mod screen;
pub mod script;
pub mod serve;
pub mod server;
pub mod service;
pub mod store;
