//! `reelfarm`: one binary for every role. Parses the command line, loads the
//! configuration, initialises telemetry and runs.

use clap::Parser;
use reelfarm::{admin, bench, cli, serve};

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    let config = match reelfarm_shared::Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("reelfarm: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    init_telemetry(config.log_json, !matches!(cli.command, cli::Command::Serve { .. }));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let result = runtime.block_on(async move {
        match cli.command {
            cli::Command::Serve { role } => serve::run(role, config).await,
            cli::Command::Admin(command) => admin::run(command, config).await,
            cli::Command::Bench(cli::Bench::Convert { seconds, rounds }) => {
                tokio::task::spawn_blocking(move || bench::convert::run(seconds, rounds)).await?
            }
            cli::Command::Bench(cli::Bench::Upload { size_mib }) => bench::upload::run(&config, size_mib).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reelfarm: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs to stderr: JSON lines when configured, text otherwise; `RUST_LOG` filters.
/// Admin commands log only warnings so their output stays clean for scripts.
fn init_telemetry(json: bool, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "warn" } else { "info" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}
