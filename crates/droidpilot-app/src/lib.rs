//! droidpilot's application: everything between the core types and the front ends.
//!
//! Modules, lowest first: `device` (the real-phone backend over ADB, the pool that leases
//! phones to tasks, what runs an action on a phone), `llm` (model clients per provider),
//! `agent` (the agents that choose actions), `outbound` (the guard on every URL the server
//! calls because a caller named it), `mcp` (the client for MCP servers the agent calls),
//! `run` (queue, scheduler, the runner's loop, events, webhooks, retention), `cluster`
//! (instances sharing one PostgreSQL database), `config` (the configuration file's schema,
//! a leaf), `core` (builds and stops all of it once), and `service` (the use cases: submit,
//! cancel, answer, take-over, script runs, acting on and reading a device, each with typed
//! input and one `AppError`). The front ends (HTTP, MCP, the
//! command line) sit above this crate and never below it.
//!
//! The layers below are re-exported under their usual names (`domain`, `screen`,
//! `script`, `store`, `adbd`), so a path reads the same in every crate above the core.

pub use droidpilot_core::{domain, screen, script, video};
pub use droidpilot_sim::adbd;
pub use droidpilot_store as store;

pub mod agent;
pub mod apps;
pub mod cluster;
pub mod config;
pub mod core;
pub mod device;
pub mod fuzzing;
pub mod llm;
pub mod mcp;
pub mod ocr;
pub mod outbound;
pub mod run;
pub mod service;
