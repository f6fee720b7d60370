//! The Model Context Protocol, both ways (issue 14), on the `rmcp` crate.
//!
//! - `client`: the agent's `mcp_call` reaches real MCP servers configured in
//!   `[[mcp.servers]]` (stdio commands or Streamable HTTP URLs).
//! - `server`: droidpilot's pool, queue and scripts exposed as MCP tools, over stdio
//!   (`droidpilot mcp`) and Streamable HTTP (`/mcp`).

pub mod client;
pub mod server;
