//! droidpilot's MCP server driven by the SDK's own client, over stdio and HTTP.
