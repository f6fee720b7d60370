//! The Model Context Protocol on the application's side: `client`, with which the agent's
//! `mcp_call` reaches the MCP servers configured in `[[mcp.servers]]` (stdio commands or
//! Streamable HTTP URLs). droidpilot as an MCP server is a front end, above this crate.

pub mod client;
