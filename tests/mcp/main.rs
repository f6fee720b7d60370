//! MCP both ways, exercised by the official MCP Python SDK (PyPI `mcp`): its own client
//! drives droidpilot's MCP server (`server`), and a stdio server written with it is the
//! agent's `mcp_call` target (`client`).
//!
//! Without the SDK these tests print a skip notice, unless DROIDPILOT_REQUIRE_MCP_SDK=1
//! (CI), in which case they fail.

#[path = "../common/mod.rs"]
mod common;
mod sdk;

mod client;
mod server;
