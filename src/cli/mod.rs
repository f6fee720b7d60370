//! The `droidpilot` command line: argument definitions and the commands' bodies. The
//! binary (`src/main.rs`) only parses and dispatches.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub mod devices;
pub mod doctor;
pub mod eval;
pub mod flow;
pub mod mcp;
pub mod migrate_store;
pub mod remote;
pub mod run;
pub mod screen;
pub mod script;
pub mod sim;
pub mod workspace;

use crate::config::{Config, LogFormat, Overrides};
use crate::server::ServeOptions;

/// `droidpilot openapi`: the OpenAPI document on `out`. Written, not `print!`ed, so a
/// reader that stops early (`| head`) is an error the caller can recognise.
pub fn openapi(out: &mut impl std::io::Write) -> anyhow::Result<()> {
    out.write_all(crate::server::openapi_json().as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Whether `e` is a write into a pipe whose reader has gone (`droidpilot openapi | head`):
/// the reader has what it wanted, so the command ends quietly and successfully.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

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
// Parsed once at start-up; boxing the big variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run the HTTP/WebSocket server: device pool, task queue and API on 127.0.0.1:8080 by default.
    Serve(ServeArgs),
    /// Print the OpenAPI 3.1 document of the HTTP API (the committed copy is openapi/openapi.json).
    Openapi,
    /// Read a uiautomator dump (a file, or - for stdin) and print what the model would see.
    Screen(screen::ScreenArgs),
    /// Serve a virtual phone as an adbd over TCP, for `adb connect 127.0.0.1:PORT`.
    Sim(sim::SimArgs),
    /// List the devices droidpilot can reach: id, backend, model, state and screen.
    Devices(devices::DevicesArgs),
    /// Check adb, the adb server and each device, and print fixes for what is wrong.
    Doctor(doctor::DoctorArgs),
    /// Measure droidpilot itself and print figures (not pass/fail).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Write a task's trajectory.json and screenshots/NNNN.png into a directory.
    Export(ExportArgs),
    /// Run one task in the terminal, without the server: live progress, then a summary.
    Run(run::RunArgs),
    /// Scripts: record a finished task, run one without a model, import and export.
    #[command(subcommand)]
    Script(script::ScriptCommand),
    /// Maestro flows: run a workspace folder across the phones (`flow test DIR`).
    #[command(subcommand)]
    Flow(flow::FlowCommand),
    /// Maestro workspaces stored on a running server: push a folder or .zip as a new workspace or version, list them.
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCommand),
    /// Serve droidpilot as an MCP server over stdio (for Claude Code, Claude Desktop, Cursor): the same core as `serve`.
    Mcp(mcp::McpArgs),
    /// Copy a SQLite database into an empty PostgreSQL one, verified by counting rows.
    MigrateStore(migrate_store::MigrateStoreArgs),
    /// Score an agent on the virtual phone's tasks (success per tier, false successes, loops, cost), or compare two scores.
    Eval(eval::EvalArgs),
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// A suite of Maestro flows (40 for the virtual phone's apps) on one phone and sharded over several, each phone charging a real phone's time: the sharded share of the time and the server's overhead per device command.
    Flows(BenchFlowsArgs),
    /// Latency of the ADB backend through the real adb server, against the adb CLI doing the same.
    Adb(BenchAdbArgs),
    /// Server overhead per step (replay agent, virtual phone, SQLite) and throughput with N phones.
    Runner(BenchRunnerArgs),
    /// Script replay suites: flows recorded once (or scripts from a folder), replayed under UI drift by selectors, selectors + AI in the middle (a rule model, and a no-op one), and blind coordinates.
    Replay(BenchReplayArgs),
    /// A normal authenticated GET's latency (p50/p99) while one client, or twenty, tries to exhaust the server: silent sockets, slowloris, WebSockets, SSE streams (loopback, about 2 minutes).
    Attack(BenchAttackArgs),
    /// Tokens per model request, by agent kind and role (navigator, vision formats, planner, progress, verifier), on the eval's tasks: system prompt, tool schemas, history, screen, image, and the share a prompt cache serves.
    Tokens(BenchTokensArgs),
    /// The screenshot a model receives per step on the eval's tasks, before (the phone's full-size PNG) and after its encoding (scaled JPEG, adaptive quality): bytes, each provider's image tokens, encoding time.
    Screenshots(BenchTokensArgs),
    /// OCR on the virtual phone's pixel-only pages (a canvas game, an image banner, a page without nodes): the share of the words a person sees that the element map holds, without and with OCR, and the ms OCR adds per new screen (needs Debian's tesseract-ocr).
    Ocr(BenchOcrArgs),
}

#[derive(Debug, clap::Args)]
pub struct BenchOcrArgs {
    /// Cold OCR reads per page (each a new Tesseract run).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub runs: u64,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct BenchTokensArgs {
    /// Task id globs (`clock.*`); every task when absent.
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct BenchAttackArgs {
    /// Seconds the victim measures during each attack (after a 3 s ramp).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=120))]
    pub secs: u64,
}

#[derive(Debug, clap::Args)]
pub struct BenchReplayArgs {
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub replay: crate::bench::replay::ReplayArgs,
}

#[derive(Debug, clap::Args)]
pub struct BenchRunnerArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure device time per step instead, with the virtual phone under this latency
    /// profile (`pixel-8`, `budget`): dumps and screenshots per step, ms per step, steps
    /// per minute, against Open-AutoGLM's loop computed under the same profile.
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<crate::device::sim::LatencyProfile>,
    /// With `--profile`: stop after the task that reaches this many steps.
    #[arg(long, default_value_t = 24, requires = "profile")]
    pub steps: usize,
    /// With `--profile`: run the stale-screen check before every targeted action whose
    /// decision took at least this long (0: every one, as with a slow model; the replay
    /// agent decides at once, so by default it never runs), to measure its cost.
    #[arg(long, value_name = "MS", requires = "profile")]
    pub stale_check_after_ms: Option<u64>,
    /// Measure on this store: `postgres://USER:PASSWORD@HOST:PORT/DATABASE` runs in a
    /// scratch database the bench creates on that server and drops afterwards (the named
    /// database is not touched; the role needs CREATEDB), with each concurrency level over
    /// 1 and 2 instances; `sqlite://DIR` keeps the SQLite files under DIR. Default: SQLite
    /// in a temporary directory.
    #[arg(long, value_name = "URL", conflicts_with = "profile")]
    pub store: Option<String>,
    /// WebSocket subscribers on the real `/v1/ws` during each concurrency level (SQLite),
    /// spread over the level's tasks; their event lag and own CPU are reported. 0: none.
    #[arg(long, default_value_t = 1000, conflicts_with = "profile")]
    pub subscribers: usize,
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

/// Whether log lines may carry ANSI colours: only on a terminal, and never with `NO_COLOR`
/// set to anything non-empty (<https://no-color.org>). Files and pipes get plain text.
pub fn log_colours(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The filter for a log spec (`RUST_LOG`, or else the configured `level`). The MCP library
/// (rmcp) logs its internal structs for every session at INFO and whole requests at DEBUG
/// (a `type` tool call's text, a password included), so it is held at WARN unless the
/// spec names it, and never below INFO even then.
pub fn log_directives(spec: &str) -> String {
    let mut rmcp = "warn";
    let mut kept: Vec<&str> = Vec::new();
    for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        match d.strip_prefix("rmcp") {
            Some(rest) if rest.is_empty() || rest.starts_with(['=', ':', '[']) => {
                let level = d.rsplit_once('=').map_or("trace", |(_, l)| l);
                rmcp = match level.to_ascii_lowercase().as_str() {
                    "off" => "off",
                    "error" => "error",
                    "warn" => "warn",
                    _ => "info",
                };
            }
            _ => kept.push(d),
        }
    }
    kept.push(match rmcp {
        "off" => "rmcp=off",
        "error" => "rmcp=error",
        "warn" => "rmcp=warn",
        _ => "rmcp=info",
    });
    kept.join(",")
}

/// Installs the tracing subscriber (on stderr). `RUST_LOG` beats the configured level;
/// either way the MCP library is capped by `log_directives`.
pub fn init_logging(format: LogFormat, level: &str) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| EnvFilter::try_new(log_directives(&spec)).ok())
        .or_else(|| EnvFilter::try_new(log_directives(level)).ok())
        .unwrap_or_else(|| EnvFilter::new(log_directives("info")));
    let ansi = log_colours(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
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
    let server = crate::serve::build(
        config.clone(),
        ServeOptions {
            insecure_no_auth: args.insecure_no_auth,
        },
    )
    .await?;
    if let Some((before, after)) = server.fd_limit()
        && after > before
    {
        tracing::info!("open-file limit raised from {before} to {after} (one per connection)");
    }
    let addr = server.local_addr();
    let devices: Vec<String> = server.pool().list().into_iter().map(|d| d.id).collect();
    tracing::info!(
        %addr,
        database = %config.store_location()?,
        auth = if config.server.tokens.is_empty() { "off" } else { "bearer" },
        open_files = server.fd_limit().map_or(0, |(_, after)| after),
        "droidpilot {} listening; dashboard at http://{addr}/, API docs at http://{addr}/docs; devices: {}",
        env!("CARGO_PKG_VERSION"),
        if devices.is_empty() { "none yet".to_string() } else { devices.join(", ") }
    );
    #[cfg(unix)]
    crate::serve::reload_actions_on_sighup(server.actions(), {
        let args = ServeArgs {
            config: args.config.clone(),
            bind: args.bind,
            data_dir: args.data_dir.clone(),
            insecure_no_auth: args.insecure_no_auth,
        };
        move || load_config(&args, log_format)
    });
    let pool = server.pool();
    let result = server.run(crate::server::shutdown_signal()).await;
    // An adb server we started would outlive us as a system-wide daemon; stop it.
    if pool.stop_started_adb_server().await {
        tracing::info!("stopped the adb server droidpilot had started");
    }
    result?;
    Ok(())
}

/// The configuration for a tool command (`doctor`, `devices`): defaults, config/local.toml,
/// `--config FILE` and the environment, as `serve` reads them. A bad `--config` is an error.
pub fn load_tool_config(config_file: Option<&PathBuf>) -> anyhow::Result<Config> {
    Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: config_file.cloned(),
            ..Default::default()
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The configured adb options, whether or not `[devices.adb] enabled` (the tools ask for adb).
fn configured_adb(config: &Config) -> crate::device::adb::AdbOptions {
    let mut pool = config.devices.pool_options();
    pool.adb
        .take()
        .unwrap_or_else(|| crate::device::adb::AdbOptions {
            server: config.devices.adb.server,
            adb_path: config.devices.adb.adb_path.clone(),
            ..Default::default()
        })
}

/// `droidpilot devices`.
pub async fn devices(args: devices::DevicesArgs) -> anyhow::Result<()> {
    let config = load_tool_config(args.config.as_ref())?;
    let adb = devices::adb_options(configured_adb(&config), args.adb_server.as_deref(), None)?;
    let mut base = config.devices.pool_options();
    base.adb = None;
    devices::run_devices(args.json, adb, base).await
}

/// `droidpilot doctor`: adb, then the models, then the MCP servers. One summary at the end, which agrees with
/// the exit code: an `Err` (exit 1) names how many checks failed.
pub async fn doctor(args: doctor::DoctorArgs) -> anyhow::Result<()> {
    let config = load_tool_config(args.config.as_ref())?;
    let opts = devices::adb_options(
        configured_adb(&config),
        args.adb_server.as_deref(),
        args.adb_path.as_deref(),
    )?;
    let checks = doctor::doctor(&opts).await;
    print!("{}", doctor::format_report(&checks));
    let mut failed = checks.iter().filter(|c| !c.ok).count();
    // Models: the default agent kind's model counts; the other is informational. A model
    // nobody chose (the defaults' examples, with no key) is "not configured": a fresh
    // install is healthy, and nothing is contacted for it.
    use crate::agent::spec::AgentKind;
    let counted = match config.agent.kind {
        AgentKind::Vision => "vision",
        _ => "navigator",
    };
    println!("\nmodels:");
    let env = |v: &str| std::env::var(v).ok();
    let mut roles = Vec::new();
    for (role, kind, cfg) in [
        ("navigator", AgentKind::Navigator, &config.agent.navigator),
        ("vision", AgentKind::Vision, &config.agent.vision),
    ] {
        if config.model_configured(kind, env) {
            roles.push((role, cfg));
        } else {
            println!("  [  --] {}", not_configured(role, cfg));
        }
    }
    for c in check_model_roles(&config.agent, &roles, env).await {
        let counts = c.name.starts_with(counted);
        let mark = if c.ok {
            "ok"
        } else if counts {
            "FAIL"
        } else {
            "warn"
        };
        println!("  [{mark:>4}] {}: {}", c.name, c.detail);
        if !c.ok && counts {
            failed += 1;
        }
    }
    if !config.mcp.servers.is_empty() {
        println!("\nmcp servers:");
        let checks = doctor::mcp_checks(&config.mcp, std::time::Duration::from_secs(35)).await;
        print!("{}", doctor::format_report(&checks));
        failed += checks.iter().filter(|c| !c.ok).count();
    }
    if failed == 0 {
        println!("\nAll checks passed.");
        Ok(())
    } else {
        println!();
        Err(anyhow::anyhow!(
            "{failed} check(s) failed; see the fixes above"
        ))
    }
}

/// `droidpilot bench adb`.
pub async fn bench_adb(args: BenchAdbArgs) -> anyhow::Result<()> {
    let opts = crate::device::adb::AdbOptions {
        server: args.adb_server,
        ..Default::default()
    };
    let dev = crate::device::adb::AdbDevice::new(&args.serial, opts);
    let rows = crate::bench::adb::bench_adb(&dev, args.iterations).await?;
    print!("{}", crate::bench::adb::format_rows(&rows));
    Ok(())
}

/// `droidpilot bench runner`.
#[derive(Debug, clap::Args)]
pub struct BenchFlowsArgs {
    /// The workspace folder.
    #[arg(long, default_value = "tests/fixtures/flows/suite40")]
    pub dir: PathBuf,
    /// Phones of the sharded run.
    #[arg(long, default_value_t = 4)]
    pub phones: usize,
    /// The virtual phones' latency profile (`fast`, `pixel-8`, `budget`).
    #[arg(long, default_value = "pixel-8")]
    pub profile: String,
    /// Phones hand over raw pixels (the virtual phone's own form) and droidpilot encodes
    /// the PNG it keeps; by default they send PNG, as `screencap -p` does.
    #[arg(long)]
    pub raw_frames: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `droidpilot bench flows`.
pub async fn bench_flows(args: BenchFlowsArgs) -> anyhow::Result<()> {
    let profile: crate::device::sim::LatencyProfile =
        serde_json::from_value(serde_json::json!(args.profile)).map_err(|_| {
            anyhow::anyhow!(
                "unknown profile `{}`: fast, pixel-8 or budget",
                args.profile
            )
        })?;
    let report = crate::bench::flows::bench_flows(&crate::bench::flows::FlowsBenchOptions {
        dir: args.dir,
        phones: args.phones.max(1),
        profile,
        raw_frames: args.raw_frames,
    })
    .await
    .map_err(|e| anyhow::anyhow!(e))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", crate::bench::flows::format_report(&report));
    }
    Ok(())
}

pub async fn bench_runner(args: BenchRunnerArgs) -> anyhow::Result<()> {
    use crate::bench::runner as bench;
    if let Some(profile) = args.profile {
        let mut runner = crate::run::runner::RunnerConfig::default();
        if let Some(ms) = args.stale_check_after_ms {
            runner.stale_check_after_ms = ms;
        }
        return bench_devtime(profile, args.steps, runner, args.json).await;
    }
    let explain = |e: bench::RunnerBenchError| anyhow::anyhow!("{e}. {}", e.hint());
    let (store, data_dir) = match &args.store {
        Some(url) => bench::BenchStore::from_url(url).map_err(explain)?,
        None => (bench::BenchStore::Sqlite, None),
    };
    let report = bench::bench_runner(bench::RunnerBenchOptions {
        progress: bench::Progress::stderr(),
        store,
        data_dir,
        ws_subscribers: args.subscribers,
        ..Default::default()
    })
    .await
    .map_err(explain)?;
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

/// `droidpilot bench runner --profile P`: device time per step (`bench::devtime`).
async fn bench_devtime(
    profile: crate::device::sim::LatencyProfile,
    steps: usize,
    runner: crate::run::runner::RunnerConfig,
    json: bool,
) -> anyhow::Result<()> {
    use crate::bench::devtime as bench;
    let dir = std::env::temp_dir().join(format!(
        "droidpilot-bench-devtime-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    ));
    eprintln!("device time per step under `{profile}`: about {steps} steps of real phone time…");
    let opts = bench::DevtimeOptions {
        profile,
        steps,
        runner,
    };
    let report = bench::bench_devtime(opts, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    let report = report.map_err(|e| anyhow::anyhow!("{e}. {}", e.hint()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", bench::format_devtime(&report));
    }
    Ok(())
}

/// `droidpilot bench attack`.
pub async fn bench_attack(args: BenchAttackArgs) -> anyhow::Result<()> {
    let (header, rows) = crate::bench::attack::bench_attack(args.secs).await?;
    print!("{}", crate::bench::attack::format_report(&header, &rows));
    Ok(())
}

/// `droidpilot bench tokens`.
pub async fn bench_tokens(args: BenchTokensArgs) -> anyhow::Result<()> {
    use crate::bench::tokens as bench;
    let opts = bench::TokensOptions {
        tasks: args.tasks,
        ..Default::default()
    };
    let report = bench::bench_tokens(&opts, &|_| {})
        .await
        .map_err(|e| match &e {
            bench::TokensError::Tasks(t) => anyhow::anyhow!("{e}. {}", t.hint()),
            bench::TokensError::Phone(_) => anyhow::anyhow!("{e}"),
        })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", bench::format_report(&report));
    }
    Ok(())
}

/// `droidpilot bench ocr`.
pub async fn bench_ocr(args: BenchOcrArgs) -> anyhow::Result<()> {
    use crate::bench::ocr as bench;
    let report = bench::bench_ocr(args.runs as usize)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", bench::format_report(&report));
    }
    Ok(())
}

/// `droidpilot bench screenshots`.
pub async fn bench_screenshots(args: BenchTokensArgs) -> anyhow::Result<()> {
    use crate::bench::screenshots as bench;
    let size = crate::domain::ScreenSize {
        width: 1080,
        height: 2400,
    };
    let report = bench::bench_screenshots(&args.tasks, size, Default::default())
        .await
        .map_err(|e| match &e {
            crate::bench::tokens::TokensError::Tasks(t) => anyhow::anyhow!("{e}. {}", t.hint()),
            crate::bench::tokens::TokensError::Phone(_) => anyhow::anyhow!("{e}"),
        })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", bench::format_report(&report));
    }
    Ok(())
}

/// `droidpilot bench replay`.
pub async fn bench_replay(args: BenchReplayArgs) -> anyhow::Result<()> {
    use crate::bench::replay as bench;
    let progress = |s: &str| eprintln!("{s}");
    let explain = |e: bench::ReplayBenchError| anyhow::anyhow!("{e}. {}", e.hint());
    let opts = bench::ReplayBenchOptions::from_args(&args.replay).map_err(explain)?;
    let report = bench::bench_replay(&opts, &progress)
        .await
        .map_err(explain)?;
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

/// The store `droidpilot serve` uses with this configuration, for commands that read it:
/// a SQLite file must already exist (a wrong `--data-dir` would otherwise create an
/// empty one and report "not found").
pub(crate) async fn open_existing_store(
    config: &Config,
) -> anyhow::Result<std::sync::Arc<dyn crate::store::Store>> {
    let loc = config.store_location()?;
    if let crate::store::StoreLocation::Sqlite(db) = &loc
        && !db.exists()
    {
        anyhow::bail!(
            "no database at {}; pass --data-dir where `droidpilot serve` keeps its data",
            db.display()
        );
    }
    Ok(crate::store::open(&loc).await?)
}

/// `droidpilot export ID --out DIR`.
pub async fn export(args: ExportArgs) -> anyhow::Result<()> {
    let config = Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            data_dir: args.data_dir.clone(),
            ..Default::default()
        },
    )?;
    let store = open_existing_store(&config).await?;
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
/// the server is reachable; the key check says whether we would be let in. A provider
/// that needs a key and has none is reported as such and contacted not at all.
pub async fn check_models(defaults: &crate::agent::spec::AgentDefaults) -> Vec<ModelCheck> {
    check_models_with(defaults, |v| std::env::var(v).ok()).await
}

/// The doctor's line for a model nobody configured, with how to configure it.
pub fn not_configured(role: &str, cfg: &crate::llm::ModelConfig) -> String {
    format!(
        "{role} model: not configured (the default is {} on {}; set {} in the server's environment, or choose a model under [agent.{role}])",
        cfg.model,
        cfg.provider.display_name(),
        cfg.provider.key_env()
    )
}

/// [`check_models`] with the environment given (tests pass their own).
pub async fn check_models_with(
    defaults: &crate::agent::spec::AgentDefaults,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<ModelCheck> {
    let roles = [
        ("navigator", &defaults.navigator),
        ("vision", &defaults.vision),
    ];
    check_model_roles(defaults, &roles, env).await
}

/// The checks of the given roles' models.
pub async fn check_model_roles(
    defaults: &crate::agent::spec::AgentDefaults,
    roles: &[(&str, &crate::llm::ModelConfig)],
    env: impl Fn(&str) -> Option<String>,
) -> Vec<ModelCheck> {
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
    for &(role, cfg) in roles {
        let name = format!(
            "{role} model {} ({})",
            cfg.model,
            cfg.provider.display_name()
        );
        let key = match defaults.keys.get(cfg.provider) {
            Some(k) => Some(k.clone()),
            None => match cfg.resolve_key_with(&env) {
                Ok(k) => k,
                Err(_) => {
                    out.push(ModelCheck {
                        name,
                        ok: false,
                        detail: format!(
                            "no {} (set it in the server's environment)",
                            cfg.provider.key_env()
                        ),
                    });
                    continue;
                }
            },
        };
        out.push(probe_model(&client, name, role, cfg, key.is_some()).await);
    }
    out
}

/// One `GET {base_url}/models`; `has_key` says whether we would be let in.
async fn probe_model(
    client: &reqwest::Client,
    name: String,
    role: &str,
    cfg: &crate::llm::ModelConfig,
    has_key: bool,
) -> ModelCheck {
    let url = format!("{}/models", cfg.base_url().trim_end_matches('/'));
    let base = cfg.base_url();
    let (ok, detail) = match client.get(&url).send().await {
        Ok(r) if r.status().as_u16() == 401 || r.status().as_u16() == 403 => {
            if has_key {
                (true, format!("{base} answers; a key is configured"))
            } else {
                (
                    false,
                    format!(
                        "{base} answers but wants a key. Try: export {}",
                        cfg.provider.key_env()
                    ),
                )
            }
        }
        Ok(_) => (true, format!("{base} answers")),
        Err(e) => (
            false,
            format!(
                "Model is not responding ({}). Check the server at {base}, or set [agent.{role}] base_url in the configuration",
                if e.is_timeout() {
                    "timed out"
                } else {
                    "connection failed"
                },
            ),
        ),
    };
    ModelCheck { name, ok, detail }
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

    #[tokio::test]
    async fn doctor_names_a_missing_key_and_contacts_nothing() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut navigator =
            crate::llm::ModelConfig::new(crate::llm::ProviderKind::Anthropic, "claude-sonnet-4-5");
        navigator.base_url = Some(format!("http://{}", listener.local_addr().unwrap()));
        let d = AgentDefaults {
            navigator,
            // The hosted OpenAI default without a key: named, and api.openai.com left alone.
            vision: crate::llm::ModelConfig::new(crate::llm::ProviderKind::Openai, "gpt-4o"),
            ..AgentDefaults::default()
        };
        let checks = check_models_with(&d, |_| None).await;
        assert_eq!(
            (checks[0].ok, checks[0].detail.as_str()),
            (
                false,
                "no ANTHROPIC_API_KEY (set it in the server's environment)"
            )
        );
        assert_eq!(
            checks[1].detail,
            "no OPENAI_API_KEY (set it in the server's environment)"
        );
        assert!(
            listener.accept().is_err(),
            "the model server was contacted without a key"
        );
    }

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(log_colours(true, None));
        assert!(!log_colours(false, None));
        assert!(!log_colours(true, Some(OsStr::new("1"))));
        assert!(log_colours(true, Some(OsStr::new(""))));
    }

    #[test]
    fn the_mcp_library_is_held_at_warn_unless_named_and_never_below_info() {
        assert_eq!(log_directives("info"), "info,rmcp=warn");
        assert_eq!(log_directives("debug"), "debug,rmcp=warn");
        assert_eq!(log_directives("info,rmcp=debug"), "info,rmcp=info");
        assert_eq!(
            log_directives("rmcp::transport=trace,debug"),
            "debug,rmcp=info"
        );
        assert_eq!(log_directives("info,rmcp=error"), "info,rmcp=error");
        // The directives parse, and rmcp's INFO is off under them.
        let filter = tracing_subscriber::EnvFilter::try_new(log_directives("info")).unwrap();
        assert!(filter.to_string().contains("rmcp=warn"), "{filter}");
    }
}
