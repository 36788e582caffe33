//! `reelfarm bench preview`: what the studio waits for, on every example template, from a
//! `serve all` process over the configured backends — preview frames (`POST
//! /generator/v1/templates/{id}/preview`) at 720p: the first of an editing session, then
//! frames while scrubbing (one at a time, at times spread over the video); and a draft
//! (`POST …/draft`) from its request to its end. Baseline measured in the same run: the
//! full 1080p render of the same template through a job. Bars: frames warm
//! p50 ≤ 150 ms, p95 ≤ 300 ms, the first ≤ 1 s; a draft of a 10 s template ≤ 1.5 s and
//! ≤ 0.3× the full 1080p render.
//!
//! The requests come one at a time from this process on loopback. The bench's user and
//! jobs stay in the configured database; its queues (own namespace) are deleted at the end.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_backends::{Blobs, Config, Store};
use reelfarm_domain::status::{JobStatus, RenderStatus};
use reelfarm_domain::token::random_base62;
use serde_json::{json, Value};

use crate::stats::Percentiles;
use reelfarm_backends::store::UserStore;
use reelfarm_server::bootstrap::examples::{import_missing, template_id, EXAMPLES};

/// The bars.
const BAR_P50_MS: f64 = 150.0;
const BAR_P95_MS: f64 = 300.0;
const BAR_FIRST_MS: f64 = 1000.0;
const BAR_DRAFT_S_PER_10_S: f64 = 1.5;
const BAR_DRAFT_RATIO: f64 = 0.3;
/// Size of the preview frames.
const QUALITY: &str = "720p";
/// Size of the baseline render.
const FULL: &str = "1080p";

pub async fn run(config: &Config, frames: u32) -> anyhow::Result<()> {
    let namespace = format!("bench{}", random_base62(8).to_lowercase());
    let store = Store::connect(&config.storage.database_url).await?;
    let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    println!("importing the example templates (first time only) …");
    import_missing(&store, &blobs, config.worker.job_timeout).await?;
    let user = store.create_user(&format!("bench-{namespace}"), None, EXAMPLES.len() as i64).await?;
    let token = store.create_token(&user.id, 1).await?.1;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("all", port, &namespace)?.spawn().context("starting `reelfarm serve all`")?;
    let result = measure(port, &token, frames).await;
    let _ = child.kill();
    let _ = child.wait();
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

async fn measure(port: u16, token: &str, frames: u32) -> anyhow::Result<()> {
    super::wait_for_api(port).await?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    println!(
        "preview frames at {QUALITY} ({frames} while scrubbing per template, one at a time); drafts; {FULL} renders"
    );
    println!(
        "{:<20} {:>7} {:>9} {:>7} {:>7} {:>9} {:>9} {:>13}",
        "template", "video s", "first ms", "p50 ms", "p95 ms", "draft s", "full s", "draft / full"
    );
    let (mut all, mut firsts, mut drafts_ok) = (Vec::new(), Vec::new(), true);
    for example in EXAMPLES {
        let id = template_id(example.stem).to_string();
        let template: Value = get_json(&client, &format!("{base}/generator/v1/templates/{id}"), token).await?;
        let duration = template["duration"].as_f64().context("the template's duration")?;
        let first = frame(&client, &base, token, &id, duration / 2.0).await?;
        let mut warm = Vec::with_capacity(frames as usize);
        for i in 0..frames {
            warm.push(frame(&client, &base, token, &id, duration * f64::from(i) / f64::from(frames.max(1))).await?);
        }
        let draft = timed_job(&client, token, &format!("{base}/generator/v1/templates/{id}/draft"), &json!({})).await?;
        let body =
            json!({ "template_id": id, "options": { "quality": FULL }, "values": [{ "template_variables": {} }] });
        let full = timed_job(&client, token, &format!("{base}/generator/v1/jobs"), &body).await?;
        let (draft, full) = (draft.as_secs_f64(), full.as_secs_f64());
        drafts_ok &= draft <= BAR_DRAFT_S_PER_10_S * duration / 10.0 && draft <= BAR_DRAFT_RATIO * full;
        let stats = Percentiles::of(warm.iter().copied());
        println!(
            "{:<20} {:>7.2} {:>9.0} {:>7.0} {:>7.0} {:>9.2} {:>9.2} {:>12.2}×",
            example.stem,
            duration,
            first,
            stats.p50,
            stats.p95,
            draft,
            full,
            draft / full
        );
        all.extend(warm);
        firsts.push(first);
    }
    let stats = Percentiles::of(all);
    let first = firsts.iter().copied().fold(0.0, f64::max);
    let verdict = |ok: bool| if ok { "within" } else { "OVER" };
    println!(
        "frames: p50 {:.0} ms ({} the bar of {BAR_P50_MS} ms), p95 {:.0} ms ({} {BAR_P95_MS} ms), \
         slowest first frame {first:.0} ms ({} {BAR_FIRST_MS} ms); drafts {} {BAR_DRAFT_S_PER_10_S} s per 10 s \
         and {BAR_DRAFT_RATIO}× the full render",
        stats.p50,
        verdict(stats.p50 <= BAR_P50_MS),
        stats.p95,
        verdict(stats.p95 <= BAR_P95_MS),
        verdict(first <= BAR_FIRST_MS),
        verdict(drafts_ok)
    );
    Ok(())
}

/// Milliseconds of one preview frame of template `id` at `t`.
async fn frame(client: &reqwest::Client, base: &str, token: &str, id: &str, t: f64) -> anyhow::Result<f64> {
    let started = Instant::now();
    let res = client
        .post(format!("{base}/generator/v1/templates/{id}/preview"))
        .bearer_auth(token)
        .json(&json!({ "t": t, "quality": QUALITY }))
        .send()
        .await?;
    if res.status() != 200 {
        bail!("a preview answered {}: {}", res.status(), res.text().await.unwrap_or_default());
    }
    res.bytes().await?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

/// How long the job that POSTing `body` to `url` makes takes, from the request to its end
/// (polled every 20 ms).
async fn timed_job(client: &reqwest::Client, token: &str, url: &str, body: &Value) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let res = client.post(url).bearer_auth(token).json(body).send().await?;
    let job: Value = res.error_for_status()?.json().await?;
    let job_id = job["id"].as_str().context("the job's id")?;
    let base = url.split("/generator/").next().unwrap_or_default();
    loop {
        let job = get_json(client, &format!("{base}/generator/v1/jobs/{job_id}"), token).await?;
        if job["status"] != JobStatus::Started.as_str() {
            if job["videos"][0]["status"] != RenderStatus::Success.as_str() {
                bail!("the render of {url} did not succeed: {job}");
            }
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn get_json(client: &reqwest::Client, url: &str, token: &str) -> anyhow::Result<Value> {
    Ok(client.get(url).bearer_auth(token).send().await?.error_for_status()?.json().await?)
}
