//! MCP client: the agent's `mcp_call` reaches the MCP servers configured in
//! `[[mcp.servers]]` (stdio commands or Streamable HTTP URLs).
//!
//! - `config`: the `[mcp]` table, checked at start-up; secrets never shown.
//! - `connection`: one server kept connected (`RemoteServer`, a `ToolSource`), restarted
//!   with backoff when it dies.
//! - `result`: MCP tools and results in the agent's terms.
//!
//! `McpClients::start` (called once by `Core::build_with`) puts every server's
//! supervisor on the core's tracker and adds the server to the runner's `McpRegistry`,
//! where its tools sit beside the in-process ones under one naming rule
//! (`crate::run::mcp`). Start-up waits at most `[mcp] startup_wait_secs` for the
//! first connections and never fails because of a server: one that is down is logged,
//! reported unavailable, and retried in the background.

pub mod config;
mod connection;
mod result;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::{McpConfig, McpServerConfig, Transport};
pub use connection::{RemoteServer, ServerStatus, reconnect_policy};

use crate::run::mcp::{McpRegistry, ToolSource};

/// The configured MCP servers, each connecting (and reconnecting) in the background.
#[derive(Clone, Default)]
pub struct McpClients {
    servers: Vec<Arc<RemoteServer>>,
}

/// One server as reports show it (doctor): no secrets.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    pub name: String,
    /// How it is reached, without secrets (`McpServerConfig::describe`).
    pub transport: String,
    pub status: ServerStatus,
    /// Its tools under their own names.
    pub tools: Vec<String>,
}

impl McpClients {
    /// Starts one supervisor per server on `tracker` (they stop on `cancel`) and adds
    /// each server to `registry`. Returns at once; connections happen in the background.
    pub fn start(
        cfg: &McpConfig,
        registry: &McpRegistry,
        tracker: &TaskTracker,
        cancel: &CancellationToken,
    ) -> Result<Self, String> {
        let mut servers = Vec::new();
        for s in &cfg.servers {
            let server = Arc::new(RemoteServer::new(s.clone())?);
            registry.add_source(server.clone());
            tracker.spawn(server.clone().supervise(cancel.clone(), reconnect_policy()));
            servers.push(server);
        }
        Ok(Self { servers })
    }

    pub fn servers(&self) -> &[Arc<RemoteServer>] {
        &self.servers
    }

    /// Waits, at most `within`, until no server is still making its first attempt.
    pub async fn settled(&self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self
            .servers
            .iter()
            .any(|s| s.status() == ServerStatus::Connecting)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Each server's name, transport, status and tools.
    pub fn report(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|s| ServerReport {
                name: s.config().name.clone(),
                transport: s.config().describe(),
                status: s.status(),
                tools: s.tools().into_iter().map(|t| t.name).collect(),
            })
            .collect()
    }
}

/// Connects to every configured server once, for `droidpilot doctor`: waits at most
/// `within` for each to connect or fail, then closes them all.
pub async fn probe(cfg: &McpConfig, within: Duration) -> Result<Vec<ServerReport>, String> {
    let (tracker, cancel) = (TaskTracker::new(), CancellationToken::new());
    let clients = McpClients::start(cfg, &McpRegistry::default(), &tracker, &cancel)?;
    clients.settled(within).await;
    let report = clients.report();
    cancel.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(report)
}
