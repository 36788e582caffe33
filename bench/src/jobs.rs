//! `reelfarm bench jobs`: job-creation throughput of a separate `serve api` process over
//! the configured backends (PostgreSQL + RabbitMQ for the bar), with 64 concurrent
//! clients. Baseline measured in the same run: an authenticated read
//! (`GET /generator/v1/users/me/credits`) of the same api. Bar (issue: jobs): ≥ 1,500
//! jobs/s with p99 ≤ 50 ms.
//!
//! `--users` spreads the clients over that many users (each has its own credit row; the
//! jobs of one user queue on that row's lock until each commits).
//!
//! The bench runs in its own namespace (queues, cache keys), and deletes its queues at
//! the end; its users, template and jobs stay in the configured database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use reelfarm_backends::{Blobs, Config, Store};
use serde_json::json;

use crate::stats::Percentiles;
use reelfarm_backends::store::UserStore;
use reelfarm_server::admin::template::{import, ImportOptions};

const BAR_JOBS_PER_SECOND: f64 = 1500.0;
const BAR_P99: Duration = Duration::from_millis(50);
pub(super) const VARIABLE: &str = "6b1f8e0a-5c2d-4e3f-9a1b-2c3d4e5f6a7b";

/// What one load phase measured.
struct Phase {
    failed: u64,
    elapsed: Duration,
    /// Latencies of the successful requests.
    latency: Percentiles,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.latency.count as f64 / self.elapsed.as_secs_f64()
    }

    fn print(&self, name: &str) {
        let p = &self.latency;
        println!(
            "  {name:<8} {:>7.0} req/s  p50 {:.1} ms  p95 {:.1} ms  p99 {:.1} ms  ({} ok, {} failed)",
            self.rate(),
            p.p50,
            p.p95,
            p.p99,
            p.count,
            self.failed
        );
    }
}

pub async fn run(config: &Config, seconds: u64, connections: usize, users: usize) -> anyhow::Result<()> {
    let namespace = format!("bench{}", reelfarm_domain::token::random_base62(8).to_lowercase());
    let dir = tempfile::tempdir()?;
    let store = Store::connect(&config.storage.database_url).await?;
    let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    let mut tokens = Vec::with_capacity(users);
    for i in 0..users.max(1) {
        let user = store.create_user(&format!("bench-{namespace}-{i}"), None, 1_000_000_000_000).await?;
        tokens.push(store.create_token(&user.id, 1).await?.1);
    }
    let template = dir.path().join("bench.json");
    std::fs::write(&template, serde_json::to_vec(&bench_template())?)?;
    let options =
        ImportOptions { owner: None, public: true, time_limit: Duration::from_secs(120), limits: Default::default() };
    let template = import(&store, &blobs, &template, &options).await?;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("api", port, &namespace)?.spawn().context("starting `reelfarm serve api`")?;
    let result = measure(port, tokens, template.id.as_str(), seconds, connections).await;
    let _ = child.kill();
    let _ = child.wait();
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

/// A 1280×720, 5 s template with one text variable.
pub(super) fn bench_template() -> serde_json::Value {
    json!({
        "version": 1,
        "name": "Bench",
        "canvas": { "width": 1280, "height": 720, "fps": 25, "background": "#202020" },
        "clips": [{
            "id": "only", "duration": 5,
            "layers": [{
                "id": "title", "kind": "text", "x": 80, "y": 300, "width": 1120, "height": 120,
                "text": "Hello", "font": { "family": "Liberation Sans", "size": 64 },
                "variable": { "id": VARIABLE, "name": "Title", "weight": 1 }
            }]
        }]
    })
}

async fn measure(
    port: u16,
    tokens: Vec<String>,
    template_id: &str,
    seconds: u64,
    connections: usize,
) -> anyhow::Result<()> {
    let tokens = Arc::new(tokens);
    let base = format!("http://127.0.0.1:{port}");
    super::wait_for_api(port).await?;
    let client = reqwest::Client::builder().pool_max_idle_per_host(connections).build()?;
    let duration = Duration::from_secs(seconds);
    println!(
        "jobs bench: {connections} clients for {} user(s), {seconds} s per phase, against `serve api` on port {port}",
        tokens.len()
    );

    let credits = format!("{base}/generator/v1/users/me/credits");
    let read = load(connections, duration, {
        let (client, tokens) = (client.clone(), tokens.clone());
        move |n| client.get(&credits).bearer_auth(&tokens[n as usize % tokens.len()])
    })
    .await;
    read.print("baseline");

    let jobs = format!("{base}/generator/v1/jobs");
    let template_id = template_id.to_string();
    let create = load(connections, duration, {
        let (client, tokens) = (client.clone(), tokens.clone());
        move |n| {
            let body = json!({
                "template_id": template_id,
                "options": { "quality": "480p" },
                "values": [{ "external_id": format!("bench-{n}"), "template_variables": { VARIABLE: format!("Title {n}") } }]
            });
            client.post(&jobs).bearer_auth(&tokens[n as usize % tokens.len()]).json(&body)
        }
    })
    .await;
    create.print("jobs");

    println!("  ratio    jobs / baseline reads: {:.2}", create.rate() / read.rate().max(1.0));
    let pass = create.rate() >= BAR_JOBS_PER_SECOND
        && create.latency.p99 <= BAR_P99.as_secs_f64() * 1000.0
        && create.failed == 0;
    println!(
        "  bar      ≥ {BAR_JOBS_PER_SECOND:.0} jobs/s with p99 ≤ {} ms: {} ({:.2}× the rate)",
        BAR_P99.as_millis(),
        if pass { "PASS" } else { "FAIL" },
        create.rate() / BAR_JOBS_PER_SECOND
    );
    Ok(())
}

/// Runs `connections` clients sending requests made by `request(n)` back to back for
/// `duration`.
async fn load<F>(connections: usize, duration: Duration, request: F) -> Phase
where
    F: Fn(u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let end = started + duration;
    // Progress: the phase's seconds, with the requests sent so far.
    let bar = indicatif::ProgressBar::new(duration.as_secs());
    bar.set_style(
        indicatif::ProgressStyle::with_template("  {bar:30} {pos}/{len} s  {msg}").expect("progress template"),
    );
    let ticker = {
        let (bar, counter) = (bar.clone(), counter.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                bar.set_position(started.elapsed().as_secs());
                bar.set_message(format!("{} requests", counter.load(std::sync::atomic::Ordering::Relaxed)));
            }
        })
    };
    let clients: Vec<_> = (0..connections)
        .map(|_| {
            let (request, counter) = (request.clone(), counter.clone());
            tokio::spawn(async move {
                let (mut latencies, mut failed) = (Vec::new(), 0u64);
                while Instant::now() < end {
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let sent = Instant::now();
                    let ok = match request(n).send().await {
                        Ok(res) => res.status().is_success() && res.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if ok {
                        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                    } else {
                        failed += 1;
                    }
                }
                (latencies, failed)
            })
        })
        .collect();
    let (mut latencies, mut failed) = (Vec::new(), 0);
    for client in clients {
        let (ms, refused) = client.await.expect("load client");
        latencies.extend(ms);
        failed += refused;
    }
    let elapsed = started.elapsed();
    ticker.abort();
    bar.finish_and_clear();
    Phase { failed, elapsed, latency: Percentiles::of(latencies) }
}
