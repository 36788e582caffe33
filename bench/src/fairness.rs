//! `reelfarm bench fairness`: the farm shared between accounts on the
//! configured backends. Two worker slots (embedded: one `serve all` with two; distributed:
//! a `serve all` and a `serve worker` with one each) render account A's job of
//! `--renders` videos of the quote-card example at 480p (written through the store: the
//! API takes 100 values a job). First A runs alone for [`ALONE`] (its render time), then
//! account B sends a job of one video through the API, `--tries` times,
//! [`SPACING`] render times apart (plus a fraction, to land at different moments of A's
//! renders): B asks for about 2 % of the farm, as a tenant of single videos beside a
//! batch. Each time B's wait (its video's start less the job's creation) is compared with
//! one render time, and A's throughput meanwhile with A's alone — before B's tries and
//! again after them for as long as they took (the baseline brackets the shared window, so
//! the machine's drift over the run cancels). Bars: B's p95 wait within
//! one render time (first come first served would keep B waiting for A's whole queue);
//! A's throughput down by at most 5 %.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_backends::store::{JobCreation, JobStore, RenderStore, UserStore};
use reelfarm_backends::{Config, Store};
use reelfarm_domain::id::{now_ms, JobId};

use crate::stats::Percentiles;

/// Videos of A's that end before the baseline is measured (processes warm).
const WARM: usize = 20;
/// Length of the baseline: A alone.
const ALONE: Duration = Duration::from_secs(20);
/// Render times between two of B's tries: B asks for about 1.7 % of two slots, so A's
/// throughput shows what sharing costs beyond B's own videos.
const SPACING: f64 = 30.0;
/// The bars.
const BAR_WAIT_RENDERS: f64 = 1.0;
const BAR_THROUGHPUT_DROP: f64 = 0.05;

pub async fn run(config: &Config, renders: u32, tries: u32) -> anyhow::Result<()> {
    let (namespace, store, template) = super::quote_card(config).await?;
    let a = store.create_user(&format!("bench-a-{namespace}"), None, i64::from(renders)).await?;
    let b = store.create_user(&format!("bench-b-{namespace}"), None, i64::from(tries)).await?;
    let token = store.create_token(&b.id, 1).await?.1;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let distributed = config.bus.amqp_url.is_some();
    let slots = if distributed { "1" } else { "2" };
    let mut children = vec![super::serve("all", port, &namespace)?
        .env("REELFARM_WORKER_SLOTS", slots)
        .spawn()
        .context("serve all")?];
    if distributed {
        let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut worker = super::serve("worker", port, &namespace)?;
        worker.env("REELFARM_WORKER_SLOTS", "1").env("REELFARM_OPS_LISTEN", format!("127.0.0.1:{ops}"));
        children.push(worker.spawn().context("serve worker")?);
    }
    super::wait_for_api(port).await?;
    let job = super::batch_job(&a.id, &template, renders);
    let probe = Probe { port, token, template: template.id.to_string() };
    let result = match store.create_job(&job, None).await? {
        JobCreation::Created => measure(&store, &job.id, &probe, tries, if distributed { 2 } else { 1 }).await,
        other => Err(anyhow::anyhow!("the bench's job was not created: {other:?}")),
    };
    let _ = store.cancel_job(&job.id).await;
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

/// B's side: a job of one video through the API.
struct Probe {
    port: u16,
    token: String,
    template: String,
}

impl Probe {
    /// Sends B's job and waits until its video started; the wait in ms (server times).
    async fn wait(&self, store: &Store, client: &reqwest::Client) -> anyhow::Result<f64> {
        let body = serde_json::json!({ "template_id": self.template, "options": { "quality": "480p" },
            "values": [{ "external_id": "b" }] });
        let url = format!("http://127.0.0.1:{}/generator/v1/jobs", self.port);
        let job: serde_json::Value =
            client.post(url).bearer_auth(&self.token).json(&body).send().await?.error_for_status()?.json().await?;
        let id = JobId::parse(job["id"].as_str().unwrap_or_default()).context("the job's id")?;
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let job = store.job(&id).await?;
            // (The next try comes many render times later: this one will have ended.)
            if let Some(started) = job.renders[0].started_at {
                return Ok((started - job.created_at) as f64);
            }
            if Instant::now() > deadline {
                bail!("B's video did not start within 600 s");
            }
            // Seldom enough not to take the workers' CPU (the wait is read off the
            // store's times, not this loop's).
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A's videos ended, as (start, end) in Unix ms, by end.
async fn ended(store: &Store, job: &JobId) -> anyhow::Result<Vec<(i64, i64)>> {
    let job = store.job(job).await?;
    let mut ended: Vec<(i64, i64)> = job
        .renders
        .iter()
        .filter_map(|r| Some((r.started_at?, r.finished_at.filter(|_| r.status.is_final())?)))
        .collect();
    ended.sort_by_key(|(_, end)| *end);
    Ok(ended)
}

/// A's throughput in videos per second between `from` and `to` (Unix ms).
fn rate(ended: &[(i64, i64)], from: i64, to: i64) -> f64 {
    ended.iter().filter(|(_, end)| (from..to).contains(end)).count() as f64 / ((to - from) as f64 / 1000.0)
}

async fn measure(store: &Store, job: &JobId, probe: &Probe, tries: u32, processes: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while ended(store, job).await?.len() < WARM {
        if Instant::now() > deadline {
            bail!("A's first {WARM} videos did not end within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let alone_from = now_ms();
    tokio::time::sleep(ALONE).await;
    let alone_to = now_ms();
    let before = ended(store, job).await?;
    let mut times: Vec<f64> =
        before.iter().filter(|(_, end)| *end >= alone_from).map(|(s, e)| (e - s) as f64).collect();
    if times.is_empty() {
        bail!("no video of A's ended in {ALONE:?}");
    }
    let render_ms = Percentiles::of(std::mem::take(&mut times)).p50;

    let client = reqwest::Client::new();
    let mut waits = Vec::with_capacity(tries as usize);
    let total = store.job(job).await?.renders.len();
    let mut queued = 0;
    let shared_from = now_ms();
    for i in 0..tries {
        let pause = render_ms * (SPACING + f64::from(i % 7) / 7.0);
        tokio::time::sleep(Duration::from_millis(pause as u64)).await;
        if i == 0 {
            queued = total - ended(store, job).await?.len();
        }
        waits.push(probe.wait(store, &client).await?);
    }
    let shared_to = now_ms();
    // A alone again, as long as B's tries took: the baseline brackets the shared window,
    // so a drift of the machine's speed over the run weighs on both sides alike.
    let again_from = now_ms();
    tokio::time::sleep(Duration::from_millis((shared_to - shared_from) as u64)).await;
    let again_to = now_ms();
    let after = ended(store, job).await?;
    if after.len() >= total {
        bail!("A's queue ran out before the bench ended: give more --renders");
    }
    let (before_rate, again) = (rate(&after, alone_from, alone_to), rate(&after, again_from, again_to));
    let alone = (before_rate * (alone_to - alone_from) as f64 + again * (again_to - again_from) as f64)
        / ((alone_to - alone_from) + (again_to - again_from)) as f64;
    let shared = rate(&after, shared_from, shared_to);
    let drop = 1.0 - shared / alone;
    let farm = shared + f64::from(tries) / ((shared_to - shared_from) as f64 / 1000.0);
    let waiting = Percentiles::of(waits);
    println!(
        "fairness: account A's {total} videos (quote-card, 480p) on 2 worker slots ({processes} process{}); \
         account B sends one video {tries} times",
        if processes == 1 { "" } else { "es" }
    );
    println!("{:<48} {:>10}", "measure", "value");
    println!("{:<48} {:>7.0} ms", "A's render time (median, alone)", render_ms);
    println!("{:<48} {:>7.2} /s", "A's throughput alone, before B's tries", before_rate);
    println!("{:<48} {:>7.2} /s", "A's throughput alone, after them", again);
    println!("{:<48} {:>7.2} /s", "A's throughput alone (baseline, both)", alone);
    println!("{:<48} {:>7.2} /s", "A's throughput while B's videos run", shared);
    println!("{:<48} {:>7.2} /s", "the farm's (A's and B's) meanwhile", farm);
    println!("{:<48} {:>10}", "A's videos queued at B's first try", queued);
    println!("{:<48} {:>7.0} ms", "B's wait to start, p50", waiting.p50);
    println!("{:<48} {:>7.0} ms", "B's wait to start, p95", waiting.p95);
    println!("{:<48} {:>7.0} s", "first come first served: B's wait behind A's queue", {
        (total - before.len()) as f64 / alone
    });
    let ratio = waiting.p95 / render_ms;
    println!(
        "fairness: B's p95 wait {ratio:.2}× a render time ({} the bar of {BAR_WAIT_RENDERS:.1}×); A's throughput \
         {:+.1} % ({} the bar of -{:.0} %)",
        if ratio <= BAR_WAIT_RENDERS { "within" } else { "OVER" },
        -drop * 100.0,
        if drop <= BAR_THROUGHPUT_DROP { "within" } else { "OVER" },
        BAR_THROUGHPUT_DROP * 100.0
    );
    Ok(())
}
