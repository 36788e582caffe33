//! `reelfarm bench fairness --long`: account A has a 10-hour draft and a 10-hour paid
//! render of one template (each split into 3,600 chunks), account C two 10-hour GIFs of
//! it (not split: each one long unit of work), on two worker slots; account B sends one
//! video of the quote-card example through the API, `--tries` times. The scheduler weighs
//! what each account has running by its estimated CPU-seconds, A's draft leads only A's
//! own queue, and a worker gives long units all its slots but one, so B's video waits for
//! no more than a chunk of A's to end. Bar: B's p95 wait within two of B's own render
//! times.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_backends::store::{JobCreation, JobStore, RenderStore, UserStore};
use reelfarm_backends::{Blobs, Config};
use reelfarm_domain::id::JobId;
use reelfarm_domain::output::{Format, Output};

use crate::stats::Percentiles;
use reelfarm_server::admin::template::{import, ImportOptions};

/// Seconds of A's videos.
const HOURS_10: f64 = 36_000.0;
const BAR_WAIT_RENDERS: f64 = 2.0;

/// A's template: a 10-hour 640×360 clip with a backdrop and a title.
fn long_template() -> serde_json::Value {
    serde_json::json!({
        "version": 1, "name": "Ten hours", "canvas": { "width": 640, "height": 360, "fps": 30 },
        "clips": [{ "id": "all", "duration": HOURS_10, "layers": [
            { "id": "bg", "kind": "shape", "x": 0, "y": 0, "width": 640, "height": 360, "color": "#203040" },
            { "id": "title", "kind": "text", "x": 20, "y": 140, "width": 600, "height": 80, "text": "Ten hours",
              "font": { "family": "Liberation Sans", "size": 48 } }
        ] }]
    })
}

pub async fn run(config: &Config, tries: u32) -> anyhow::Result<()> {
    let (namespace, store, quote_card) = super::quote_card(config).await?;
    let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    let a = store.create_user(&format!("bench-a-{namespace}"), None, 10_000).await?;
    let b = store.create_user(&format!("bench-b-{namespace}"), None, i64::from(tries)).await?;
    let c = store.create_user(&format!("bench-c-{namespace}"), None, 10_000).await?;
    let token = store.create_token(&b.id, 1).await?.1;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("ten-hours.json");
    std::fs::write(&file, long_template().to_string())?;
    let limits = reelfarm_domain::cost::Limits { max_duration: HOURS_10, ..config.render };
    let options =
        ImportOptions { owner: Some(a.name.clone()), public: false, time_limit: config.worker.job_timeout, limits };
    let template = import(&store, &blobs, &file, &options).await?;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("all", port, &namespace)?
        .env("REELFARM_WORKER_SLOTS", "2")
        .env("REELFARM_MAX_VIDEO_DURATION", "10h")
        .spawn()
        .context("serve all")?;
    super::wait_for_api(port).await?;
    let mut jobs = Vec::new();
    for (draft, gif) in [(true, false), (false, false), (false, true), (false, true)] {
        let owner = if gif { &c.id } else { &a.id };
        let mut job = reelfarm_domain::job::NewJob { draft, ..super::batch_job(owner, &template, 1) };
        if gif {
            // One frame a second, 64 px wide: a spool of 330 MB for the ten hours.
            job.output = Output { format: Format::Gif, fps: Some(1), max_width: Some(64), ..Output::default() };
            job.renders.iter_mut().for_each(|r| r.long_unit = true);
        }
        match store.create_job(&job, None).await? {
            JobCreation::Created => jobs.push(job.id),
            other => bail!("A's job was not created: {other:?}"),
        }
    }
    let result = measure(&store, &jobs, port, &token, quote_card.id.as_str(), tries).await;
    for job in &jobs {
        let _ = store.cancel_job(job).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

async fn measure(
    store: &reelfarm_backends::Store,
    a_jobs: &[JobId],
    port: u16,
    token: &str,
    template: &str,
    tries: u32,
) -> anyhow::Result<()> {
    // A's draft and video split and rendering, one of C's GIFs too (the other slot is kept
    // for shorter work), before B comes.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut started = 0;
        for job in a_jobs {
            started += store.job(job).await?.renders.iter().filter(|r| r.started_at.is_some()).count();
        }
        if started == a_jobs.len() - 1 {
            break;
        }
        if Instant::now() > deadline {
            bail!("A's videos did not start within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let client = reqwest::Client::new();
    let (mut waits, mut renders) = (Vec::new(), Vec::new());
    for _ in 0..tries {
        let body = serde_json::json!({ "template_id": template, "options": { "quality": "480p" }, "values": [{}] });
        let url = format!("http://127.0.0.1:{port}/generator/v1/jobs");
        let job: serde_json::Value =
            client.post(url).bearer_auth(token).json(&body).send().await?.error_for_status()?.json().await?;
        let id = JobId::parse(job["id"].as_str().unwrap_or_default()).context("the job's id")?;
        let deadline = Instant::now() + Duration::from_secs(300);
        let (started, finished) = loop {
            let job = store.job(&id).await?;
            let render = &job.renders[0];
            if let (Some(started), Some(finished)) = (render.started_at, render.finished_at) {
                break (started - job.created_at, finished - started);
            }
            if Instant::now() > deadline {
                bail!("B's video did not end within 300 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        waits.push(started as f64);
        renders.push(finished as f64);
    }
    let (waits, renders) = (Percentiles::of(waits), Percentiles::of(renders));
    println!(
        "fairness --long: account A renders a 10-hour draft and a 10-hour video (split), account C two 10-hour \
         GIFs (whole), on 2 worker slots;"
    );
    println!("account B sends one video of quote-card at 480p {tries} times");
    println!("{:<40} {:>9}", "measure", "value");
    println!("{:<40} {:>6.0} ms", "B's render time, p50", renders.p50);
    println!("{:<40} {:>6.0} ms", "B's wait to start, p50", waits.p50);
    println!("{:<40} {:>6.0} ms", "B's wait to start, p95", waits.p95);
    let ratio = waits.p95 / renders.p50;
    println!(
        "fairness --long: B's p95 wait {ratio:.2}× its render time ({} the bar of {BAR_WAIT_RENDERS:.0}×)",
        if ratio <= BAR_WAIT_RENDERS { "within" } else { "OVER" }
    );
    Ok(())
}
