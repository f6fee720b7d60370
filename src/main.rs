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
            Command::Openapi => {
                print!("{}", droidpilot::server::openapi_json());
                Ok(())
            }
            Command::Screen(args) => {
                droidpilot::screen::cli::run(&args, &mut std::io::stdout().lock())
            }
            Command::Sim(args) => {
                droidpilot::cli::init_logging(
                    cli.log_format
                        .unwrap_or(droidpilot::config::LogFormat::Text),
                    "info",
                );
                droidpilot::adbd::cli::run(args).await
            }
            Command::Devices(args) => {
                let base = droidpilot::config::Config::load(
                    std::path::Path::new("config"),
                    &Default::default(),
                )
                .map(|c| droidpilot::device::pool::PoolOptions {
                    sims: c.devices.sim,
                    ..Default::default()
                })
                .unwrap_or_default();
                droidpilot::device::cli::run_devices(&args, base).await
            }
            Command::Doctor(args) => {
                let adb_ok = droidpilot::device::cli::run_doctor(&args).await?;
                // Models: the default agent kind's model counts; the other is informational.
                let mut models_ok = true;
                if let Ok(cfg) = droidpilot::config::Config::load(
                    std::path::Path::new("config"),
                    &Default::default(),
                ) {
                    let counted = match cfg.agent.kind {
                        droidpilot::agent::spec::AgentKind::Vision => "vision",
                        _ => "navigator",
                    };
                    println!("\nmodels:");
                    for c in droidpilot::cli::check_models(&cfg.agent).await {
                        let counts = c.name.starts_with(counted);
                        let mark = if c.ok {
                            "ok"
                        } else if counts {
                            "FAIL"
                        } else {
                            "warn"
                        };
                        println!("  [{mark:>4}] {}: {}", c.name, c.detail);
                        models_ok &= c.ok || !counts;
                    }
                }
                if adb_ok && models_ok {
                    Ok(())
                } else {
                    Err(anyhow::anyhow!("some checks failed; see the fixes above"))
                }
            }
            Command::Bench(droidpilot::cli::BenchCommand::Adb(args)) => {
                droidpilot::cli::bench_adb(args).await
            }
            Command::Bench(droidpilot::cli::BenchCommand::Runner(args)) => {
                droidpilot::cli::bench_runner(args).await
            }
            Command::Export(args) => droidpilot::cli::export(args).await,
            Command::Run(args) => match droidpilot::cli::run::run(args).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(anyhow::anyhow!("the task did not succeed")),
                Err(e) => Err(e),
            },
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
