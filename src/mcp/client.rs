//! MCP client: see `super`.
