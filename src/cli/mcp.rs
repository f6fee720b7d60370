//! `droidpilot mcp`: the MCP server over stdio, on the same core as `serve` (store, pool
//! with the configured phones, scheduler), until the client closes stdin or a signal
//! arrives. stdout carries only the protocol; logs go to stderr.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, LogFormat, Overrides};
use crate::core::Core;

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// A TOML file layered over the defaults and config/local.toml.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Where the database and artifacts live (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

pub async fn run(args: McpArgs, log_format: Option<LogFormat>) -> anyhow::Result<()> {
    let config = Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: args.config,
            data_dir: args.data_dir,
            log_format,
            ..Default::default()
        },
    )?;
    super::init_logging(config.log.format, &config.log.level);
    let mut config = config;
    config.cluster = config.cluster.for_command("mcp");
    let core = Arc::new(Core::build(&config).await?);
    core.recover().await?;
    core.start_scheduler();
    tracing::info!(
        database = %config.store_location()?,
        "droidpilot {} serving MCP on stdio",
        env!("CARGO_PKG_VERSION")
    );
    let served = tokio::select! {
        r = crate::mcp::server::serve_stdio(core.clone()) => r,
        () = crate::server::shutdown_signal() => Ok(()),
    };
    let grace = Duration::from_secs(config.server.shutdown_grace_secs.max(1));
    core.shutdown(grace).await;
    if core.pool.stop_started_adb_server().await {
        tracing::info!("stopped the adb server droidpilot had started");
    }
    served
}
