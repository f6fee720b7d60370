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

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `.rs` file under `dir` (relative to the crate root) with its text.
    fn sources(dir: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut todo = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)];
        while let Some(d) = todo.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    out.push((p.display().to_string(), text));
                }
            }
        }
        out
    }

    /// The two front ends stay apart, so each can become a crate over the application
    /// alone: the MCP server never reaches into the HTTP server, nor the reverse; the top
    /// level (`serve`) mounts one inside the other.
    #[test]
    fn the_front_ends_never_import_each_other() {
        let found: Vec<String> = (sources("src/mcp/server").into_iter())
            .filter(|(_, t)| t.contains("crate::server"))
            .chain(
                sources("src/server")
                    .into_iter()
                    .filter(|(_, t)| t.contains("crate::mcp::server")),
            )
            .map(|(p, _)| p)
            .collect();
        assert!(
            found.is_empty(),
            "front ends importing each other: {found:?}"
        );
    }
}
