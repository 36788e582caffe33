//! reelfarm's worker: converts uploads into renditions and renders job videos from
//! templates, consuming each of its two queues with as many messages at once as it has
//! slots. A message on either is a token for one claim of the scheduler's next unit of
//! its kind (renders, their parts and templates' media; conversions).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reelfarm_backends::consumer::consume;
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::message::Queue;
use tokio_util::sync::CancellationToken;

mod failure;
mod job;
pub mod media;
pub mod render;
mod rotation;
pub mod sandbox;
mod tts;

pub use job::RenderHandler;

/// Preview frames drawn at once (beside the slots of the queues: a frame is short, and a
/// person waits for it).
const PREVIEW_SLOTS: u16 = 2;

/// The directory conversions and renders keep their temporary files in, created if
/// missing.
fn work_dir(config: &Config) -> std::io::Result<std::path::PathBuf> {
    let dir = config.storage.data_dir.join("work");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Consumes the worker's queues (conversions and renders) until `shutdown`; work under
/// way finishes first.
pub async fn run(config: &Config, backends: Backends, shutdown: CancellationToken) -> anyhow::Result<()> {
    // This worker's name in diagnostics: host, process and a random suffix.
    let worker_id = format!(
        "{}-{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into()),
        std::process::id(),
        reelfarm_domain::token::random_base62(4)
    );
    // One memory budget (`REELFARM_MEDIA_MEMORY`) for every conversion and render here.
    let limits = media::Limits::from_config(config);
    let media_memory_mib = limits.memory.total_mib();
    render::size_caches(&config.caches);
    let rotation =
        Arc::new(rotation::Rotation::new(backends.store().clone(), worker_id.clone(), config.worker.worker_slots));
    let render =
        Arc::new(RenderHandler::new(config, backends.clone(), limits, worker_id, rotation.clone(), shutdown.clone())?);
    // Nothing runs past `job_timeout`: twice that is surely left over.
    let sweep = sweep_work_dir_hourly(work_dir(config)?, config.worker.job_timeout * 2, shutdown.clone());
    tracing::info!(slots = config.worker.worker_slots, ?media_memory_mib, "worker consuming");
    let bus = backends.bus();
    let slots = config.worker.worker_slots;
    tokio::join!(
        consume_in_rotation(bus, Queue::Convert, slots, render.clone(), &rotation, &shutdown),
        consume_in_rotation(bus, Queue::Render, slots, render.clone(), &rotation, &shutdown),
        rotation.keep(shutdown.clone()),
        render.clone().serve_previews(PREVIEW_SLOTS, shutdown.clone()),
        render.listen_for_wakes(shutdown.clone()),
        sweep,
    );
    Ok(())
}

/// Consumes `queue` while the worker is in rotation, until `shutdown`: taken out, it stops
/// taking messages (what it holds goes back to the queue) until put back.
async fn consume_in_rotation(
    bus: &reelfarm_backends::bus::Bus,
    queue: Queue,
    slots: u16,
    handler: Arc<RenderHandler>,
    rotation: &rotation::Rotation,
    shutdown: &CancellationToken,
) {
    while !shutdown.is_cancelled() {
        let stop = shutdown.child_token();
        let taken_out = async {
            tokio::select! {
                () = rotation.wait_until(true) => stop.cancel(),
                () = stop.cancelled() => {}
            }
        };
        tokio::join!(consume(bus.clone(), queue, slots, handler.clone(), stop.clone()), taken_out);
        tokio::select! {
            () = rotation.wait_until(false) => {}
            () = shutdown.cancelled() => {}
        }
    }
}

/// Sweeps the work directory at start and every hour until `shutdown`.
async fn sweep_work_dir_hourly(dir: std::path::PathBuf, older_than: Duration, shutdown: CancellationToken) {
    reelfarm_backends::housekeeping::every_round(shutdown, || {
        let dir = dir.clone();
        async move {
            match tokio::task::spawn_blocking(move || sweep_work_dir(&dir, older_than)).await {
                Ok(0) | Err(_) => {}
                Ok(removed) => {
                    tracing::info!(removed, "housekeeping: removed what stopped runs left in the work directory")
                }
            }
        }
    })
    .await
}

/// Removes the entries of `dir` last changed more than `older_than` ago: what conversions
/// and renders of processes that died left behind (work under way made its directory when
/// it started, less than `older_than` ago). Several workers may share `dir`; an entry
/// another one removed first is skipped. Returns how many entries went.
fn sweep_work_dir(dir: &Path, older_than: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|age| age > older_than));
        if !stale {
            continue;
        }
        let path = entry.path();
        let gone = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        match gone {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "housekeeping: could not remove a stale work entry")
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets the modification time of `path` to `age` ago.
    fn age(path: &Path, age: Duration) {
        let file = std::fs::File::open(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[test]
    fn only_entries_older_than_the_limit_are_swept() {
        let work = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        for name in ["render-old", "render-new"] {
            std::fs::create_dir(work.path().join(name)).unwrap();
            std::fs::write(work.path().join(name).join("out.mp4"), b"partial").unwrap();
        }
        std::fs::write(work.path().join("stray-old"), b"x").unwrap();
        age(&work.path().join("render-old"), 5 * hour);
        age(&work.path().join("stray-old"), 5 * hour);
        age(&work.path().join("render-new"), hour);

        assert_eq!(sweep_work_dir(work.path(), 4 * hour), 2);
        let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["render-new"]);
        assert_eq!(std::fs::read(work.path().join("render-new/out.mp4")).unwrap(), b"partial");
        assert_eq!(sweep_work_dir(work.path(), 4 * hour), 0);
        assert_eq!(sweep_work_dir(&work.path().join("missing"), hour), 0);
    }
}
