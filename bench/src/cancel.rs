//! `reelfarm bench cancel`: cancelling a job of many videos on the configured
//! backends. A `serve all` process renders a job of `--renders` videos of the quote-card
//! example at 480p (written through the store: the API takes 100 values a job); once its
//! first videos ended, `POST /generator/v1/jobs/{id}/cancel` is timed against the
//! baseline `GET /generator/v1/jobs/{id}` of the same job (the same rows read), and after
//! the workers had seconds to take more messages every video's start is compared with
//! the moment the cancel answered. Bars: the answer in ≤ 200 ms; no video started after it.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_backends::store::{JobCreation, JobStore, UserStore};
use reelfarm_backends::{Config, Store};
use reelfarm_domain::id::{now_ms, JobId};
use reelfarm_domain::status::RenderStatus;

use crate::stats::Percentiles;

/// The bar of the cancel's answer.
const BAR_ANSWER_MS: f64 = 200.0;
/// Videos that end before the cancel.
const ENDED_FIRST: usize = 2;
/// Time the workers have after the cancel to (wrongly) start another video.
const AFTER: Duration = Duration::from_secs(5);
/// Timed requests of each kind (the median is reported).
const ROUNDS: usize = 5;

pub async fn run(config: &Config, renders: u32) -> anyhow::Result<()> {
    let (namespace, store, template) = super::quote_card(config).await?;
    let user = store.create_user(&format!("bench-{namespace}"), None, i64::from(renders)).await?;
    let token = store.create_token(&user.id, 1).await?.1;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("all", port, &namespace)?.spawn().context("starting `reelfarm serve all`")?;
    super::wait_for_api(port).await?;
    let job = super::batch_job(&user.id, &template, renders);
    let result = match store.create_job(&job, None).await? {
        JobCreation::Created => measure(&store, port, &token, &job.id).await,
        other => Err(anyhow::anyhow!("the bench's job was not created: {other:?}")),
    };
    let _ = child.kill();
    let _ = child.wait();
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

async fn measure(store: &Store, port: u16, token: &str, id: &JobId) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/generator/v1/jobs/{id}");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = store.job(id).await?;
        if job.renders.iter().filter(|r| r.status.is_final()).count() >= ENDED_FIRST {
            break;
        }
        if Instant::now() > deadline {
            bail!("{ENDED_FIRST} videos did not end within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut reads = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        client.get(&url).bearer_auth(token).send().await?.error_for_status()?.bytes().await?;
        reads.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    // The first cancel does the work; the next ones (no-ops) show the answer alone.
    let mut cancels = Vec::with_capacity(ROUNDS);
    let mut answered_at = 0;
    for round in 0..ROUNDS {
        let started = Instant::now();
        client.post(format!("{url}/cancel")).bearer_auth(token).send().await?.error_for_status()?.bytes().await?;
        cancels.push(started.elapsed().as_secs_f64() * 1000.0);
        if round == 0 {
            answered_at = now_ms();
        }
    }
    tokio::time::sleep(AFTER).await;
    let job = store.job(id).await?;
    let count = |status: RenderStatus| job.renders.iter().filter(|r| r.status == status).count();
    let late = job.renders.iter().filter(|r| r.started_at.is_some_and(|t| t > answered_at)).count();
    let (first, read) = (cancels[0], Percentiles::of(reads).p50);
    println!("cancel of a job of {} videos ({} ended before it), after which {AFTER:?} passed", job.renders.len(), {
        count(RenderStatus::Success) + count(RenderStatus::Failed)
    });
    println!("{:<44} {:>9}", "request", "ms");
    println!("{:<44} {read:>9.1}", "GET the job (baseline, median)");
    println!("{:<44} {first:>9.1}", "POST …/cancel (cancelling)");
    println!("{:<44} {:>9.1}", "POST …/cancel again (no-op, median)", Percentiles::of(cancels[1..].to_vec()).p50);
    println!(
        "cancel: {first:.0} ms = {:.2}× the read ({} the bar of {BAR_ANSWER_MS} ms); {} videos cancelled, {late} \
         started after the answer ({})",
        first / read,
        if first <= BAR_ANSWER_MS { "within" } else { "OVER" },
        count(RenderStatus::Cancelled),
        if late == 0 { "as required" } else { "WRONG" }
    );
    Ok(())
}
