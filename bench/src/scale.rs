//! `reelfarm bench scale`: how the farm's throughput grows with its slots. One
//! `serve all` in embedded mode of its own (a temporary data directory: SQLite, files,
//! the in-process bus), whatever the configuration, each slot with one x264 thread,
//! renders a fixed batch of the example templates at 480p (the seven in turn, each with
//! its own values); once per slot count, one after the other. Each run's time is the
//! first job's creation to the last video's end (server times). Prints renders per
//! minute and the speed-up over the first slot count, with the machine's cores: a slot
//! count above them shows what over-subscription costs.

use std::io::IsTerminal;

use anyhow::{bail, Context};
use reelfarm_backends::store::{JobCreation, JobStore, TemplateStore, UserStore};
use reelfarm_backends::{Blobs, Config, Store};
use reelfarm_domain::id::RenderId;
use reelfarm_server::bootstrap::examples;

pub async fn run(slot_counts: &[u16], renders: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().to_str().context("the temporary directory's path")?.to_string();
    let config = Config::from_sources(None, [("REELFARM_DATA_DIR".to_string(), data_dir.clone())])?;
    let store = Store::connect(&config.storage.database_url).await?;
    let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    println!("importing the example templates …");
    examples::import_missing(&store, &blobs, config.worker.job_timeout).await?;
    let mut templates = Vec::new();
    for example in examples::EXAMPLES {
        templates.push(store.template(&examples::template_id(example.stem)).await?);
    }
    // Credits enough for every run's renders.
    let credits = i64::from(renders).saturating_mul(i64::try_from(slot_counts.len())?).saturating_mul(20);
    let user = store.create_user("bench-scale", None, credits).await?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{renders} renders at 480p of the {} examples; {cores} cores ({})", templates.len(), cpu_model());
    println!("{:>6} {:>10} {:>13} {:>9}", "slots", "seconds", "renders/min", "speed-up");
    let mut first: Option<f64> = None;
    for &slots in slot_counts {
        let seconds = measure(&store, &data_dir, &user.id, &templates, slots, renders).await?;
        let per_minute = f64::from(renders) * 60.0 / seconds;
        let speed_up = per_minute / *first.get_or_insert(per_minute);
        println!("{slots:>6} {seconds:>10.1} {per_minute:>13.1} {speed_up:>8.2}×");
    }
    Ok(())
}

/// Starts `serve all` with `slots` on `data_dir`, renders the batch and stops it; the
/// batch's time in seconds.
async fn measure(
    store: &Store,
    data_dir: &str,
    user: &reelfarm_domain::id::UserId,
    templates: &[reelfarm_domain::template::stored::TemplateRecord],
    slots: u16,
    renders: u32,
) -> anyhow::Result<f64> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("all", port, "")?
        .env("REELFARM_DATA_DIR", data_dir)
        .env_remove("REELFARM_DATABASE_URL")
        .env_remove("REELFARM_BLOB_URL")
        .env_remove("REELFARM_BUS_URL")
        .env_remove("REELFARM_CONFIG")
        .env_remove("REELFARM_REDIS_URL")
        .env("REELFARM_WORKER_SLOTS", slots.to_string())
        .env("REELFARM_ENCODER_THREADS", "1")
        // Its warnings on stopping would break the table; a failed render says why.
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("serve all")?;
    let result = async {
        super::wait_for_api(port).await?;
        let mut ids: Vec<RenderId> = Vec::new();
        let started = reelfarm_domain::id::now_ms();
        let count = templates.len() as u32;
        for (i, template) in templates.iter().enumerate() {
            // The batch in equal shares, the first templates one more where it does not divide.
            let share = renders / count + u32::from((i as u32) < renders % count);
            if share == 0 {
                continue;
            }
            let job = super::batch_job(user, template, share);
            ids.extend(job.renders.iter().map(|r| r.id.clone()));
            match store.create_job(&job, None).await? {
                JobCreation::Created => {}
                other => bail!("the bench's job was not created: {other:?}"),
            }
        }
        let mut ended = started;
        // Where a person watches: how far the batch is, on one line of the terminal.
        let watched = std::io::stderr().is_terminal();
        for (done, id) in (1..).zip(&ids) {
            ended = ended.max(super::wait_success(store, id).await?.1);
            if watched {
                eprint!("\r{slots:>6} slots: {done} of {} renders finished", ids.len());
            }
        }
        if watched {
            eprint!("\r\x1b[K");
        }
        Ok((ended - started) as f64 / 1000.0)
    }
    .await;
    super::stop(&mut child);
    result
}

/// The CPU's model name, as Linux reports it.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "CPU model unknown".into())
}
