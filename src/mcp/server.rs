//! MCP server: see `super`.
