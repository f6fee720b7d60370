//! The top of the application: the HTTP front end with the MCP front end mounted at
//! `/mcp`. The one place the two front ends meet; neither imports the other.

use std::sync::Arc;

use crate::config::Config;
use crate::server::{Mount, MountedService, ServeOptions, Server, StartError};

/// The services mounted inside the HTTP router: MCP over Streamable HTTP at `/mcp`
/// (rmcp's own Host check off: the router's `hosts::check` covers it, and knows
/// `server.allowed_hosts`).
pub fn mounts() -> Vec<Mount> {
    vec![Mount {
        path: "/mcp",
        make: Arc::new(|core, stopping| {
            MountedService::new(crate::mcp::server::http_service(core, stopping, false))
        }),
    }]
}

/// The server `droidpilot serve` runs: `Server::build_with` and every front end mounted.
pub async fn build(config: Config, opts: ServeOptions) -> Result<Server, StartError> {
    Server::build_with(config, opts, &mounts()).await
}
