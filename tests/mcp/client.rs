//! The agent's `mcp_call` against a real stdio MCP server written with the SDK.
