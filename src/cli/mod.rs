//! The `droidpilot` command line: argument definitions and the commands' bodies. The
//! binary (`src/main.rs`) only parses and dispatches.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub mod run;

use crate::config::{Config, LogFormat, Overrides};
use crate::server::{ServeOptions, Server};

#[derive(Debug, Parser)]
#[command(
    name = "droidpilot",
    version,
    about = "A server for LLM agents that operate Android phones."
)]
pub struct Cli {
    /// Log format: text for terminals, json for log shippers.
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP/WebSocket server: device pool, task queue and API on 127.0.0.1:8080 by default.
    Serve(ServeArgs),
    /// Print the OpenAPI 3.1 document of the HTTP API (the committed copy is openapi/openapi.json).
    Openapi,
    /// Read a uiautomator dump (a file, or - for stdin) and print what the model would see.
    Screen(crate::screen::cli::ScreenArgs),
    /// Serve a virtual phone as an adbd over TCP, for `adb connect 127.0.0.1:PORT`.
    Sim(crate::adbd::cli::SimArgs),
    /// List the devices droidpilot can reach: id, backend, model, state and screen.
    Devices(crate::device::cli::DevicesArgs),
    /// Check adb, the adb server and each device, and print fixes for what is wrong.
    Doctor(crate::device::cli::DoctorArgs),
    /// Measure droidpilot itself and print figures (not pass/fail).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Write a task's trajectory.json and screenshots/NNNN.png into a directory.
    Export(ExportArgs),
    /// Run one task in the terminal, without the server: live progress, then a summary.
    Run(run::RunArgs),
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Latency of the ADB backend through the real adb server, against the adb CLI doing the same.
    Adb(BenchAdbArgs),
    /// Server overhead per step (replay agent, virtual phone, SQLite) and throughput with N phones.
    Runner(BenchRunnerArgs),
}

#[derive(Debug, clap::Args)]
pub struct BenchRunnerArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct BenchAdbArgs {
    /// The device's serial as `adb devices` shows it (e.g. 127.0.0.1:5555 for `droidpilot sim`).
    #[arg(long)]
    pub serial: String,
    /// The adb server, host:port.
    #[arg(long, default_value = "127.0.0.1:5037")]
    pub adb_server: std::net::SocketAddrV4,
    /// Repetitions per operation.
    #[arg(long, default_value_t = 30)]
    pub iterations: usize,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The task id.
    pub id: crate::domain::TaskId,
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A TOML file layered over the defaults (to find the data directory).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The data directory holding droidpilot.db (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// A TOML file layered over the defaults and config/local.toml.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The address to listen on, e.g. 127.0.0.1:8080 (non-loopback addresses need a token).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// Where the database and artifacts live (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Serve without authentication on a non-loopback address. Dangerous; logged loudly.
    #[arg(long)]
    pub insecure_no_auth: bool,
}

/// Loads the configuration for `serve` (flags over env over files over defaults).
pub fn load_config(
    args: &ServeArgs,
    log_format: Option<LogFormat>,
) -> Result<Config, crate::config::ConfigError> {
    Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            bind: args.bind,
            data_dir: args.data_dir.clone(),
            log_format,
        },
    )
}

/// Installs the tracing subscriber. `RUST_LOG` beats the configured level.
pub fn init_logging(format: LogFormat, level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// `droidpilot serve`.
pub async fn serve(args: ServeArgs, log_format: Option<LogFormat>) -> anyhow::Result<()> {
    let config = load_config(&args, log_format)?;
    init_logging(config.log.format, &config.log.level);
    let server = Server::build(
        config.clone(),
        ServeOptions {
            insecure_no_auth: args.insecure_no_auth,
        },
    )
    .await?;
    tracing::info!(
        addr = %server.local_addr(),
        database = %config.database_path().display(),
        auth = if config.server.tokens.is_empty() { "off" } else { "bearer" },
        "droidpilot {} listening; API docs at http://{}/docs",
        env!("CARGO_PKG_VERSION"),
        server.local_addr()
    );
    server.run(crate::server::shutdown_signal()).await?;
    Ok(())
}

/// `droidpilot bench adb`.
pub async fn bench_adb(args: BenchAdbArgs) -> anyhow::Result<()> {
    let opts = crate::device::adb::AdbOptions {
        server: args.adb_server,
        ..Default::default()
    };
    let dev = crate::device::adb::AdbDevice::new(&args.serial, opts);
    let rows = crate::device::adb::bench::bench_adb(&dev, args.iterations).await?;
    print!("{}", crate::device::adb::bench::format_rows(&rows));
    Ok(())
}

/// `droidpilot bench runner`.
pub async fn bench_runner(args: BenchRunnerArgs) -> anyhow::Result<()> {
    use crate::run::bench;
    let report = bench::bench_runner(bench::RunnerBenchOptions::default())
        .await
        .map_err(|e| anyhow::anyhow!("{e}. {}", e.hint()))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&bench::report_json(&report))?
        );
    } else {
        print!("{}", bench::format_report(&report));
    }
    Ok(())
}

/// `droidpilot export ID --out DIR`.
pub async fn export(args: ExportArgs) -> anyhow::Result<()> {
    use std::sync::Arc;
    let config = Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            data_dir: args.data_dir.clone(),
            ..Default::default()
        },
    )?;
    let db = config.database_path();
    if !db.exists() {
        anyhow::bail!(
            "no database at {}; pass --data-dir where `droidpilot serve` keeps its data",
            db.display()
        );
    }
    let store: Arc<dyn crate::store::Store> = Arc::new(crate::store::SqliteStore::open(&db).await?);
    let artifacts =
        crate::run::artifacts::ArtifactStore::new(&config.storage.data_dir, store.clone());
    let summary =
        crate::run::trajectory::export_dir(store.as_ref(), &artifacts, args.id, &args.out).await?;
    println!(
        "wrote {}/trajectory.json: {} steps, {} screenshots{}",
        args.out.display(),
        summary.steps,
        summary.screenshots,
        if summary.missing_screenshots > 0 {
            format!(" ({} missing on disk)", summary.missing_screenshots)
        } else {
            String::new()
        }
    );
    store.close().await;
    Ok(())
}

/// One line of `doctor`'s model section.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCheck {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// Checks that each configured model's server answers and that its key is present. It
/// asks `GET {base_url}/models` (OpenAI-compatible servers and Gemini list models there;
/// Anthropic answers it too), so no tokens are spent. Any HTTP answer, even 401, proves
/// the server is reachable; the key check says whether we would be let in.
pub async fn check_models(defaults: &crate::agent::spec::AgentDefaults) -> Vec<ModelCheck> {
    let client = match reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return vec![ModelCheck {
                name: "http client".into(),
                ok: false,
                detail: e.to_string(),
            }];
        }
    };
    let mut out = Vec::new();
    for (role, cfg) in [
        ("navigator", &defaults.navigator),
        ("vision", &defaults.vision),
    ] {
        let name = format!(
            "{role} model {} ({})",
            cfg.model,
            cfg.provider.display_name()
        );
        let url = format!("{}/models", cfg.base_url().trim_end_matches('/'));
        let key = defaults
            .keys
            .get(cfg.provider)
            .cloned()
            .map(Some)
            .or_else(|| cfg.resolve_key().ok())
            .flatten();
        let is_local = cfg.base_url.is_some();
        match client.get(&url).send().await {
            Ok(r) if r.status().as_u16() == 401 || r.status().as_u16() == 403 => out.push(ModelCheck {
                name,
                ok: key.is_some(),
                detail: if key.is_some() {
                    format!("{} answers; a key is configured", cfg.base_url())
                } else {
                    format!("{} answers but wants a key. Try: export {}", cfg.base_url(), cfg.provider.key_env())
                },
            }),
            Ok(_) => out.push(ModelCheck {
                name,
                ok: key.is_some() || is_local,
                detail: if key.is_some() || is_local {
                    format!("{} answers", cfg.base_url())
                } else {
                    format!("{} answers, but no key is set. Try: export {}", cfg.base_url(), cfg.provider.key_env())
                },
            }),
            Err(e) => out.push(ModelCheck {
                name,
                ok: false,
                detail: format!(
                    "Model is not responding ({}). Check the server at {}, or set [agent.{role}] base_url in the configuration",
                    if e.is_timeout() { "timed out" } else { "connection failed" },
                    cfg.base_url()
                ),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::spec::AgentDefaults;

    #[tokio::test]
    async fn doctor_reports_reachable_and_dead_model_servers() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::path("/v1/models"))
            .respond_with(
                wiremock::ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({"object": "list", "data": []})),
            )
            .mount(&server)
            .await;
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut d = AgentDefaults::default();
        d.navigator.base_url = Some(format!("{}/v1", server.uri()));
        d.vision.base_url = Some(format!("http://{dead}/v1"));
        let checks = check_models(&d).await;
        assert!(checks[0].ok, "{checks:?}");
        assert!(!checks[1].ok);
        assert!(
            checks[1].detail.contains("Model is not responding")
                && checks[1].detail.contains(&dead.to_string()),
            "{checks:?}"
        );
    }
}
