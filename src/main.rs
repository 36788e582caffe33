//! `reelfarm`: one binary for every role. Parses the command line, loads the
//! configuration, initialises telemetry and runs.

use clap::Parser;
use reelfarm_bench::{self as bench, loadtest};
use reelfarm_server::telemetry::Telemetry;
use reelfarm_server::{admin, render, serve};

mod cli;

fn main() -> std::process::ExitCode {
    reelfarm_backends::allocator::configure();
    let cli = cli::Cli::parse();
    match cli.command {
        // These work on files or a remote deployment alone: no configuration, no data
        // directory.
        cli::Command::Render(args) => standalone(render::run(args)),
        cli::Command::Loadtest(args) => standalone(loadtest::run(args)),
        // Before any thread or runtime: the child confines itself first.
        cli::Command::Sandbox => reelfarm_server::sandbox::child::main(),
        command => with_config(command, cli.config.as_deref()),
    }
}

fn standalone(work: impl std::future::Future<Output = anyhow::Result<()>>) -> std::process::ExitCode {
    let telemetry = Telemetry::init(false, true, None).expect("logs without an exporter");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let code = exit_code(runtime.block_on(work));
    telemetry.shutdown();
    code
}

fn with_config(command: cli::Command, config_file: Option<&std::path::Path>) -> std::process::ExitCode {
    let config = match reelfarm_backends::Config::load(config_file) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("reelfarm: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let service = match &command {
        cli::Command::Serve { role, .. } => format!("reelfarm-{role:?}").to_lowercase(),
        _ => "reelfarm".to_string(),
    };
    let serving = matches!(command, cli::Command::Serve { .. });
    let otlp = config.ops.otlp_endpoint.as_deref().map(|endpoint| (endpoint, service.as_str()));
    let telemetry = match Telemetry::init(config.ops.log_json, !serving, otlp) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("reelfarm: REELFARM_OTLP_ENDPOINT: the span exporter cannot be made: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let result = runtime.block_on(async move {
        match command {
            cli::Command::Serve { role, bootstrap } => {
                let mut config = config;
                if bootstrap {
                    config.api.bootstrap = reelfarm_backends::config::Bootstrap::On;
                }
                serve::run(role, config).await
            }
            cli::Command::Admin(command) => admin::run(command, config).await,
            cli::Command::Migrate => migrate(&config).await,
            cli::Command::Bench(bench) => bench::run(bench, &config).await,
            cli::Command::Render(_) | cli::Command::Loadtest(_) | cli::Command::Sandbox => {
                unreachable!("run without a configuration")
            }
        }
    });
    drop(runtime);
    telemetry.shutdown();
    exit_code(result)
}

/// `reelfarm migrate`: connecting the store applies its pending migrations.
async fn migrate(config: &reelfarm_backends::Config) -> anyhow::Result<()> {
    use anyhow::Context;
    let store = reelfarm_backends::Store::connect(&config.storage.database_url).await.context("metadata store")?;
    store.close().await;
    println!("metadata store migrated");
    Ok(())
}

fn exit_code(result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reelfarm: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
