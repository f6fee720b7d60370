//! The HTTP API end to end: a real server on a random port, a fresh SQLite file per test,
//! requests over TCP. One test binary with a module per area keeps link time down.

#[path = "../common/mod.rs"]
mod common;

mod actions;
mod apps;
mod chain;
mod control;
mod crash;
mod dashboard;
mod devices;
mod extend;
mod flow_recovery;
mod flow_runs;
mod flows;
mod handwritten;
mod hosts;
mod http;
mod lifecycle;
mod limits;
mod model_keys;
mod ocr;
mod planned;
mod replay_mp4;
mod retention;
mod rotate;
mod run;
mod scopes;
mod script_custom;
mod script_replay;
mod scripts;
mod streaming;
mod takeover;
mod tasks;
mod webhook_hosts;
mod workspaces;
