//! `reelfarm bench …`: measurements that print ratios against a baseline measured in the
//! same run (never timed tests), and `reelfarm loadtest`, which drives a running
//! deployment over its API. Results and commands are recorded in `docs/performance.md`.

use reelfarm_backends::store::TemplateStore;
pub mod bus;
pub mod cancel;
pub mod cli;
pub mod console;
pub mod convert;
pub mod estimate;
pub mod fairness;
pub mod fairness_long;
pub mod formats;
pub mod jobs;
pub mod loadtest;
pub mod lottie;
pub mod preview;
pub mod render;
pub mod scale;
pub mod split;
mod stats;
pub mod upload;

/// Runs the bench `bench` on the configured deployment (the benches that measure this
/// machine alone ignore it).
pub async fn run(bench: cli::Bench, config: &reelfarm_backends::Config) -> anyhow::Result<()> {
    use cli::Bench;
    match bench {
        Bench::Convert { seconds, rounds } => {
            tokio::task::spawn_blocking(move || convert::run(seconds, rounds)).await?
        }
        Bench::Formats { rounds } => tokio::task::spawn_blocking(move || formats::run(rounds)).await?,
        Bench::Lottie { rounds } => tokio::task::spawn_blocking(move || lottie::run(rounds)).await?,
        Bench::Estimate { quality } => tokio::task::spawn_blocking(move || estimate::run(quality)).await?,
        Bench::Render { quality, rounds, keep } => {
            let heights = render::heights(&quality)?;
            tokio::task::spawn_blocking(move || render::run(&heights, rounds, keep.as_deref())).await?
        }
        Bench::Jobs { seconds, connections, users } => jobs::run(config, seconds, connections, users).await,
        Bench::Bus { messages } => bus::run(config, messages).await,
        Bench::Upload { size_mib } => upload::run(config, size_mib).await,
        Bench::Console { assets, jobs, requests } => {
            console::run(config, console::Sizes { assets, jobs, requests }).await
        }
        Bench::Preview { frames } => preview::run(config, frames).await,
        Bench::Cancel { renders } => cancel::run(config, renders).await,
        Bench::Fairness { tries, long: true, .. } => fairness_long::run(config, tries).await,
        Bench::Fairness { renders, tries, long: false } => fairness::run(config, renders, tries).await,
        Bench::Split { seconds, rounds } => split::run(config, seconds, rounds).await,
        Bench::Scale { slots, renders } => scale::run(&slots, renders).await,
    }
}

/// What the cancel and fairness benches start from: a bus namespace of their own, the
/// configured store, and the quote-card example (imported the first time).
pub async fn quote_card(
    config: &reelfarm_backends::Config,
) -> anyhow::Result<(String, reelfarm_backends::Store, reelfarm_domain::template::stored::TemplateRecord)> {
    let namespace = format!("bench{}", reelfarm_domain::token::random_base62(8).to_lowercase());
    let store = reelfarm_backends::Store::connect(&config.storage.database_url).await?;
    let blobs = reelfarm_backends::Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    println!("importing the example templates (first time only) …");
    reelfarm_server::bootstrap::examples::import_missing(&store, &blobs, config.worker.job_timeout).await?;
    let template = store.template(&reelfarm_server::bootstrap::examples::template_id("quote-card")).await?;
    Ok((namespace, store, template))
}

/// A job for `user` of `renders` videos of `template` at 480p, each with the template's own
/// values, as the cancel and fairness benches write it through the store (the API takes
/// 100 values a job).
pub fn batch_job(
    user: &reelfarm_domain::id::UserId,
    template: &reelfarm_domain::template::stored::TemplateRecord,
    renders: u32,
) -> reelfarm_domain::job::NewJob {
    use reelfarm_domain::id::{now_ms, JobId, RenderId};
    let quality = reelfarm_domain::quality::Quality::P480;
    let estimate = serde_json::from_str(&template.json).map_or(None, |document| {
        Some(reelfarm_domain::cost::Estimate::of(&document, quality, &Default::default(), &|_| None))
    });
    reelfarm_domain::job::NewJob {
        id: JobId::generate(),
        user_id: user.clone(),
        template_id: template.id.clone(),
        template_version: template.version,
        draft: false,
        quality,
        priority: reelfarm_domain::priority::Priority::Normal,
        create_render: true,
        create_project: false,
        notifications: Vec::new(),
        output: Default::default(),
        renders: (0..renders)
            .map(|i| reelfarm_domain::job::NewRender {
                id: RenderId::generate(),
                external_id: format!("bench-{i}"),
                title: String::new(),
                metadata: Default::default(),
                template_variables: Default::default(),
                project: None,
                credits: estimate.map_or(1, |e| e.credits()),
                cost_ms: estimate.map_or(1000, |e| e.cpu_ms()),
                video_ms: estimate.map_or(0, |e| (e.duration * 1000.0) as i64),
                long_unit: false,
            })
            .collect(),
        created_at: now_ms(),
    }
}

/// Peak and current resident set size of process `pid`, in bytes (Linux `/proc`).
pub fn rss_of(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// `n` bytes in MiB with one decimal.
pub fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
}

/// Waits until the `serve api` child listens on `port` (30 s at most).
pub async fn wait_for_api(port: u16) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if std::time::Instant::now() > deadline {
            anyhow::bail!("`serve api` did not listen within 30 s");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `reelfarm serve {role}` of this binary, for a bench: on `port` of loopback, in its own
/// bus `namespace`, without the first-run bootstrap or the rate limit, logging warnings
/// only. The caller adds its own settings, spawns it and kills it at the end.
pub fn serve(role: &str, port: u16, namespace: &str) -> anyhow::Result<std::process::Command> {
    let mut command = this_binary()?;
    command
        .args(["serve", role])
        .env("REELFARM_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("REELFARM_PUBLIC_URL")
        .env("REELFARM_NAMESPACE", namespace)
        .env("REELFARM_BOOTSTRAP", "off")
        .env("REELFARM_RATE_LIMIT", "0")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null());
    Ok(command)
}

/// A command running this binary again (a bench's child processes), also from the
/// release bundle: there the bundled loader runs the binary, so the process's own
/// executable is the loader, and the child goes through the bundle's `bin/reelfarm`.
pub fn this_binary() -> anyhow::Result<std::process::Command> {
    let exe = std::env::current_exe()?;
    Ok(std::process::Command::new(bundle_script(&exe).unwrap_or(exe)))
}

/// The bundle's `bin/reelfarm` when `exe` is its loader (`lib/ld-linux…`).
fn bundle_script(exe: &std::path::Path) -> Option<std::path::PathBuf> {
    let name = exe.file_name()?.to_str()?;
    let root = exe.parent()?.parent()?;
    name.starts_with("ld-linux").then(|| root.join("bin/reelfarm"))
}

/// Stops `child` as an operator would (SIGTERM: a worker signs its row off, so the next
/// run's workers do not count its slots), killing it after 10 s.
pub fn stop(child: &mut std::process::Child) {
    // SAFETY: kill(2) on the pid of a child this process has not waited for yet.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for `render` to succeed (30 min at most): when it was made and when it ended
/// (server times, Unix ms).
pub async fn wait_success(
    store: &reelfarm_backends::Store,
    render: &reelfarm_domain::id::RenderId,
) -> anyhow::Result<(i64, i64)> {
    use reelfarm_backends::store::RenderStore;
    use reelfarm_domain::status::RenderStatus;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1800);
    loop {
        let now = store.render(render).await?;
        if now.status.is_final() {
            let (Some(finished), RenderStatus::Success) = (now.finished_at, now.status) else {
                anyhow::bail!("the render ended {:?}: {}", now.status, now.error.unwrap_or_default());
            };
            return Ok((now.created_at, finished));
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!("the render did not end within 30 minutes");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_child_of_the_bundle_runs_through_its_script() {
        let loader = Path::new("/opt/reelfarm-0.1.0/lib/ld-linux-x86-64.so.2");
        assert_eq!(super::bundle_script(loader), Some(Path::new("/opt/reelfarm-0.1.0/bin/reelfarm").to_path_buf()));
        assert_eq!(super::bundle_script(Path::new("/usr/local/bin/reelfarm")), None);
    }
}
