//! `reelfarm serve ROLE`: composes the roles over one set of backends.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::Context;
use reelfarm_api::Application;
use reelfarm_backends::outbox::Relay;
use reelfarm_backends::{Backends, Config};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::bootstrap::{self, FirstRun};
use crate::cli::Role;

/// How long a starting process waits for a backend that does not answer (yet).
const BACKEND_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// A started service: its api port (when it serves the api), its operations port (a
/// worker or notifier with `ops_listen`) and the handle to stop it.
pub struct Service {
    pub api_port: Option<u16>,
    pub ops_port: Option<u16>,
    pub backends: Backends,
    /// The configuration it runs with: `listen` (and the default `public_url`) name the
    /// port actually bound when the configured one was 0.
    pub config: Config,
    /// What the first-run set-up found or made, when this start ran it.
    pub first_run: Option<FirstRun>,
    shutdown: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
    /// The tasks not ended yet, by name: what a slow shutdown logs.
    running: Vec<&'static str>,
}

/// Longest wait for the backends' connections to close once every task ended.
const BACKENDS_CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How often a shutdown that takes long names the tasks it still waits for.
const STOP_REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Service {
    /// Connects the backends and starts the role's tasks.
    pub async fn start(role: Role, mut config: Config) -> anyhow::Result<Service> {
        if role != Role::All && config.bus.amqp_url.is_none() {
            tracing::warn!(
                "REELFARM_BUS_URL is `local`: only this process consumes what it publishes; \
                 run `serve all`, or set an amqp:// bus for separate roles"
            );
        }
        // The api's port first: the addresses the backends hand out name it.
        let listener = match role {
            Role::Api | Role::All => Some(Application::bind(&mut config)?),
            _ => None,
        };
        let backends = Backends::connect_within(&config, BACKEND_PATIENCE).await?;
        // Before the api listens: its first request finds the owner and the examples.
        let first_run = match role {
            Role::Api | Role::All if config.bootstraps() => {
                Some(bootstrap::run(&config, &backends).await.context("first-run set-up (REELFARM_BOOTSTRAP)")?)
            }
            _ => None,
        };
        let shutdown = CancellationToken::new();
        let mut tasks = Tasks::default();

        // Every process that writes outbox rows relays them; relays share the work.
        let relay = Relay::new(backends.store().clone(), backends.bus().clone());
        let token = shutdown.clone();
        tasks.spawn("outbox relay", async move {
            relay.run(token).await;
            Ok(())
        });
        let token = shutdown.clone();
        tasks.spawn("allocator", async move {
            reelfarm_backends::allocator::give_back_periodically(token).await;
            Ok(())
        });
        let (store, blobs, token) = (backends.store().clone(), backends.blobs().clone(), shutdown.clone());
        let retention = config.storage.kept_sound_retention;
        tasks.spawn("housekeeping", async move {
            reelfarm_backends::housekeeping::run(store, blobs, retention, token).await;
            Ok(())
        });

        let mut api_port = None;
        if let Some(listener) = listener {
            let app = Application::build(listener, config.clone(), backends.clone())?;
            api_port = Some(app.port());
            tracing::info!(address = %format!("{}:{}", config.api.listen.ip(), app.port()), public_url = %config.api.public_url, "api listening");
            let token = shutdown.clone();
            tasks.spawn("api", async move { app.run_until_stopped(token).await.context("api server") });
        }
        let mut ops_port = None;
        if let Some(listen) = config.ops.ops_listen {
            let ops = reelfarm_api::OpsServer::build(listen, backends.clone())?;
            ops_port = Some(ops.port());
            tracing::info!(address = %format!("{}:{}", listen.ip(), ops.port()), "operations endpoints listening");
            let token = shutdown.clone();
            tasks.spawn("operations endpoints", async move {
                ops.run_until_stopped(token).await.context("operations endpoints")
            });
        }
        if matches!(role, Role::Worker | Role::All) {
            let (config, backends, token) = (config.clone(), backends.clone(), shutdown.clone());
            tasks.spawn("worker", async move { reelfarm_worker::run(&config, backends, token).await });
        }
        if matches!(role, Role::Notifier | Role::All) {
            let (config, backends, token) = (config.clone(), backends.clone(), shutdown.clone());
            tasks.spawn("notifier", async move { reelfarm_notifier::run(&config, backends, token).await });
        }
        let Tasks { set: tasks, names: running } = tasks;
        Ok(Service { api_port, ops_port, backends, config, first_run, shutdown, tasks, running })
    }

    /// Asks every task to stop (in-flight work finishes or is left to the bus).
    pub fn stop(&self) {
        self.shutdown.cancel();
    }

    /// Stops at once, as a crash would: tasks are aborted and connections closed without
    /// settling what is in flight (the broker redelivers it). Used on a second SIGTERM.
    pub async fn kill(mut self) {
        self.shutdown.cancel();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.backends.close().await;
    }

    /// Waits until every task ended; the first failure stops the others and is returned.
    /// Once stopping, it names the tasks still running every few seconds.
    pub async fn wait(mut self) -> anyhow::Result<()> {
        let mut first_error = None;
        // Counted from the stop: tasks that end within STOP_REPORT_EVERY are not named.
        let mut report: Option<tokio::time::Interval> = None;
        loop {
            let joined = tokio::select! {
                joined = self.tasks.join_next() => joined,
                () = self.shutdown.cancelled(), if report.is_none() => {
                    let start = tokio::time::Instant::now() + STOP_REPORT_EVERY;
                    report = Some(tokio::time::interval_at(start, STOP_REPORT_EVERY));
                    continue;
                }
                _ = async { report.as_mut().expect("set when stopping").tick().await }, if report.is_some() => {
                    tracing::warn!(waiting_for = ?self.running, "stopping: tasks still running");
                    continue;
                }
            };
            let Some(joined) = joined else { break };
            let outcome = joined.map_err(anyhow::Error::from).and_then(|(name, result)| {
                self.running.retain(|running| *running != name);
                result
            });
            if let Err(e) = outcome {
                self.shutdown.cancel();
                first_error.get_or_insert(e);
            } else if !self.shutdown.is_cancelled() {
                // A task ending on its own is a failure of the service too.
                self.shutdown.cancel();
            }
        }
        if tokio::time::timeout(BACKENDS_CLOSE_TIMEOUT, self.backends.close()).await.is_err() {
            tracing::warn!("stopping: the backends did not close within {BACKENDS_CLOSE_TIMEOUT:?}; leaving them");
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The tasks of a service, each with a name.
#[derive(Default)]
struct Tasks {
    set: JoinSet<(&'static str, anyhow::Result<()>)>,
    names: Vec<&'static str>,
}

impl Tasks {
    fn spawn(
        &mut self,
        name: &'static str,
        task: impl std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
    ) {
        self.names.push(name);
        self.set.spawn(async move { (name, task.await) });
    }
}

/// Runs `role` until SIGTERM or Ctrl-C, then shuts down gracefully.
pub async fn run(role: Role, config: Config) -> anyhow::Result<()> {
    let service = Service::start(role, config.clone()).await?;
    if let (Some(first_run), Some(port)) = (&service.first_run, service.api_port) {
        announce(first_run, config.api.listen.ip(), port);
    }
    let token = service.shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested: finishing work under way (signal again to stop at once)");
        token.cancel();
        wait_for_signal().await;
        tracing::warn!("stopping at once: unfinished work is left to the bus");
        std::process::exit(130);
    });
    service.wait().await
}

/// Prints, plainly on stdout apart from the logs, the api's address and the first-run
/// message (the token once, the first request).
fn announce(first_run: &FirstRun, ip: IpAddr, port: u16) {
    use std::io::Write;
    let host = match ip {
        ip if !ip.is_unspecified() => ip,
        IpAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
    };
    print!("{}", first_run.message(&format!("http://{}", SocketAddr::new(host, port))));
    let _ = std::io::stdout().flush();
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
