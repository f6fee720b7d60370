//! The Model Context Protocol, both ways, on the `rmcp` crate.
//!
//! - `client` (from the application crate): the agent's `mcp_call` reaches real MCP
//!   servers configured in `[[mcp.servers]]` (stdio commands or Streamable HTTP URLs).
//! - `server`: droidpilot's pool, queue and scripts exposed as MCP tools, over stdio
//!   (`droidpilot mcp`) and Streamable HTTP (`/mcp`).

pub use droidpilot_app::mcp::client;
pub use droidpilot_mcp as server;
