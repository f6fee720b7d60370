//! The `droidpilot` binary: parse the command line, dispatch, turn errors into a message
//! and an exit code.

use clap::Parser;
use droidpilot::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    // reqwest and adb_client both use rustls without a default provider; install ring
    // once, before anything opens a connection.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => droidpilot::cli::serve(args, cli.log_format).await,
            Command::Openapi => droidpilot::cli::openapi(&mut std::io::stdout().lock()),
            Command::Screen(args) => {
                droidpilot::cli::screen::run(&args, &mut std::io::stdout().lock())
            }
            Command::Sim(args) => {
                droidpilot::cli::init_logging(
                    cli.log_format
                        .unwrap_or(droidpilot::config::LogFormat::Text),
                    "info",
                );
                droidpilot::cli::sim::run(args).await
            }
            Command::Devices(args) => droidpilot::cli::devices(args).await,
            Command::Doctor(args) => droidpilot::cli::doctor(args).await,
            Command::Bench(droidpilot::cli::BenchCommand::Adb(args)) => {
                droidpilot::cli::bench_adb(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Runner(args)) => {
                droidpilot::cli::bench_runner(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Replay(args)) => {
                droidpilot::cli::bench_replay(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Attack(args)) => {
                droidpilot::cli::bench_attack(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Flows(args)) => {
                droidpilot::cli::bench_flows(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Tokens(args)) => {
                droidpilot::cli::bench_tokens(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Ocr(args)) => {
                droidpilot::cli::bench_ocr(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Screenshots(args)) => {
                droidpilot::cli::bench_screenshots(args).await
            }
            Command::Export(args) => droidpilot::cli::export(args).await,
            Command::MigrateStore(args) => droidpilot::cli::migrate_store::run(args).await,
            Command::Eval(args) => droidpilot::cli::eval::run(args).await,
            Command::Mcp(args) => droidpilot::cli::mcp::run(args, cli.log_format).await,
            Command::Script(cmd) => match droidpilot::cli::script::script(cmd).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(anyhow::anyhow!("the script did not succeed")),
                Err(e) => Err(e),
            },
            Command::Flow(cmd) => match droidpilot::cli::flow::flow(cmd).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(anyhow::anyhow!("a flow did not pass")),
                Err(e) => Err(e),
            },
            Command::Workspace(cmd) => droidpilot::cli::workspace::workspace(cmd).await,
            Command::Run(args) => match droidpilot::cli::run::run(args).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(anyhow::anyhow!("the task did not succeed")),
                Err(e) => Err(e),
            },
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // `droidpilot openapi | head`: the reader stopped, nothing went wrong.
        Err(e) if droidpilot::cli::is_closed_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
