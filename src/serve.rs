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

/// Puts the `[actions]` of a freshly loaded configuration in force (custom actions and
/// action hooks, for every action that starts from now on). A configuration that does
/// not load leaves the actions as they were; either way the outcome is logged. Nothing
/// else of the configuration changes on a running server: the rest needs a restart
/// (ports, the store, the pool and the models are built once).
pub fn reload_actions(
    actions: &crate::run::extend::LiveActions,
    loaded: Result<Config, crate::config::ConfigError>,
) -> bool {
    match loaded {
        Ok(cfg) => {
            let (custom, hooks) = (cfg.actions.custom.len(), cfg.actions.hooks.len());
            actions.replace(cfg.actions);
            tracing::info!(custom, hooks, "reloaded [actions] from the configuration");
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "the configuration did not load; [actions] unchanged");
            false
        }
    }
}

/// Reloads `[actions]` (`reload_actions`) on each SIGHUP, for as long as the process runs.
#[cfg(unix)]
pub fn reload_actions_on_sighup(
    actions: Arc<crate::run::extend::LiveActions>,
    load: impl Fn() -> Result<Config, crate::config::ConfigError> + Send + 'static,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; [actions] reload needs a restart");
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            reload_actions(&actions, load());
        }
    });
}
