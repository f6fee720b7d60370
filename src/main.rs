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
