//! `reelfarm bench split`: one long video on two workers on the configured
//! backends. A `--seconds` long 720p template of our own (twelve clips of titles, sliding
//! shapes and crossfades, no media to fetch) is rendered twice, each worker slot with one
//! x264 thread: first by one worker rendering it whole (splitting off), the baseline; then
//! by two workers with the video split into 10 s chunks (embedded: one `serve all` with
//! two slots; distributed: a `serve all` and a `serve worker` with one each). That pair of
//! runs is made twice: with each worker pinned to a core of its own (a one-core machine
//! each: the whole render on one core, the split one on two), then unpinned (the workers
//! share every core, and a single render's compositor and x264 threads already use more
//! than one). Each run's time is the job's creation to the video's end (server times), its
//! CPU the processes' user + system time meanwhile. Bars: the split render in ≤ 0.6× the
//! whole render's time, with ≤ 1.1× its CPU. The split runs split only where it pays
//! (`REELFARM_SPLIT_GAIN`'s default), as a farm does.
//!
//! Then a cheap long video (150 s of the same template at 480p, about 20 CPU-seconds)
//! through the farm of two slots, splitting where it pays, against `reelfarm render` of
//! it in one process: the farm must not be slower than 1.1× (chunks that do not pay are
//! not made).

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_backends::store::{JobCreation, JobStore, TemplateStore, UserStore};
use reelfarm_backends::{Config, Store};
use reelfarm_domain::id::{TemplateId, UserId};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::NewTemplate;
use serde_json::json;

/// The bars.
const BAR_TIME: f64 = 0.6;
const BAR_CPU: f64 = 1.1;
const BAR_CHEAP: f64 = 1.1;
/// Length of the cheap video.
const CHEAP_SECONDS: u32 = 150;
/// Chunk length of the split run.
const CHUNK: &str = "10s";

pub async fn run(config: &Config, seconds: u32, rounds: u32) -> anyhow::Result<()> {
    let namespace = format!("bench{}", reelfarm_domain::token::random_base62(8).to_lowercase());
    let store = Store::connect(&config.storage.database_url).await?;
    let user = store.create_user(&format!("bench-{namespace}"), None, i64::from(rounds.max(1)) * 12).await?;
    let template = long_template(&store, seconds).await?;
    let distributed = config.bus.amqp_url.is_some();
    println!("a {seconds} s 720p video, one x264 thread per worker slot; medians of {rounds} rounds");
    // Each worker a one-core machine (pinned), then the workers sharing this machine's
    // cores as they come. Whole and split runs alternate, so drift weighs on both.
    for pinned in [true, false] {
        let cores = |core: usize| pinned.then_some(core);
        let one: &[(&str, &str, Option<usize>)] = &[("all", "1", cores(0))];
        let two: &[(&str, &str, Option<usize>)] =
            if distributed { &[("all", "1", cores(0)), ("worker", "1", cores(1))] } else { &[("all", "2", None)] };
        let (mut whole, mut split) = (Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            whole.push(measure(&store, &namespace, &user.id, &template, one, "0", Quality::P720).await?);
            split.push(measure(&store, &namespace, &user.id, &template, two, "60s", Quality::P720).await?);
        }
        let (whole, split) = (Run::median(whole), Run::median(split));
        println!(
            "{}:",
            if pinned { "each worker on one core of its own" } else { "the workers sharing the machine's cores" }
        );
        println!("  one worker, whole:   {:>7.1} s, CPU {:>7.1} s", whole.seconds, whole.cpu);
        println!("  two workers, split:  {:>7.1} s, CPU {:>7.1} s", split.seconds, split.cpu);
        let (time, cpu) = (split.seconds / whole.seconds, split.cpu / whole.cpu);
        println!("  time  {time:.2}× the whole render's (bar ≤ {BAR_TIME}×): {}", verdict(time <= BAR_TIME));
        println!("  CPU   {cpu:.2}× the whole render's (bar ≤ {BAR_CPU}×): {}", verdict(cpu <= BAR_CPU));
    }
    let cheap = long_template(&store, CHEAP_SECONDS).await?;
    let two: &[(&str, &str, Option<usize>)] =
        if distributed { &[("all", "1", None), ("worker", "1", None)] } else { &[("all", "2", None)] };
    let (mut farm, mut alone) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        farm.push(measure(&store, &namespace, &user.id, &cheap, two, "60s", Quality::P480).await?);
        alone.push(Run { seconds: render_alone(&cheap.json, Quality::P480)?, cpu: 0.0 });
    }
    let (farm, alone) = (Run::median(farm).seconds, Run::median(alone).seconds);
    println!("a cheap {CHEAP_SECONDS} s video at 480p:");
    println!("  the farm, two slots:  {farm:>7.1} s");
    println!("  reelfarm render:      {alone:>7.1} s");
    let ratio = farm / alone;
    println!("  the farm {ratio:.2}× reelfarm render (bar ≤ {BAR_CHEAP}×): {}", verdict(ratio <= BAR_CHEAP));
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// One run's figures.
struct Run {
    seconds: f64,
    cpu: f64,
}

impl Run {
    /// The median time and the median CPU of `runs`.
    fn median(runs: Vec<Run>) -> Run {
        let median = |mut xs: Vec<f64>| {
            xs.sort_by(f64::total_cmp);
            xs[xs.len() / 2]
        };
        Run {
            seconds: median(runs.iter().map(|r| r.seconds).collect()),
            cpu: median(runs.iter().map(|r| r.cpu).collect()),
        }
    }
}

/// Seconds `reelfarm render` of this binary takes to render `json` at `quality` (one x264
/// thread, as each worker slot here).
fn render_alone(json: &str, quality: Quality) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let template = dir.path().join("cheap.json");
    std::fs::write(&template, json)?;
    let started = Instant::now();
    let status = super::this_binary()?
        .arg("render")
        .arg(&template)
        .args(["--quality", quality.as_str(), "-o"])
        .arg(dir.path().join("cheap.mp4"))
        .env("REELFARM_ENCODER_THREADS", "1")
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        bail!("reelfarm render failed: {status}");
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Starts the processes `roles` (role, worker slots, the core it is pinned to, if any)
/// with splitting after `split_after` (`0`: never), renders one video of `template` at
/// `quality` and stops them.
async fn measure(
    store: &Store,
    namespace: &str,
    user: &UserId,
    template: &reelfarm_domain::template::stored::TemplateRecord,
    roles: &[(&str, &str, Option<usize>)],
    split_after: &str,
    quality: Quality,
) -> anyhow::Result<Run> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut children = Vec::new();
    for (role, slots, core) in roles {
        let mut command = super::serve(role, port, namespace)?;
        if let Some(core) = *core {
            pin(&mut command, core);
        }
        command
            .env("REELFARM_WORKER_SLOTS", slots)
            .env("REELFARM_ENCODER_THREADS", "1")
            .env("REELFARM_SPLIT_AFTER", split_after)
            .env("REELFARM_SPLIT_CHUNK", CHUNK);
        if *role == "worker" {
            let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            command.env("REELFARM_OPS_LISTEN", format!("127.0.0.1:{ops}"));
        }
        children.push(command.spawn().with_context(|| format!("serve {role}"))?);
    }
    let result = async {
        super::wait_for_api(port).await?;
        // Settled after starting up.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let cpu_before = cpu_of(&children);
        let job = reelfarm_domain::job::NewJob { quality, ..super::batch_job(user, template, 1) };
        let render = job.renders[0].id.clone();
        match store.create_job(&job, None).await? {
            JobCreation::Created => {}
            other => bail!("the bench's job was not created: {other:?}"),
        }
        let (created, finished) = super::wait_success(store, &render).await?;
        Ok(Run { seconds: (finished - created) as f64 / 1000.0, cpu: cpu_of(&children) - cpu_before })
    }
    .await;
    for child in &mut children {
        super::stop(child);
    }
    result
}

/// Makes `command`'s process (and every thread it starts) run on CPU `core` only.
fn pin(command: &mut std::process::Command, core: usize) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only async-signal-safe calls: filling a CPU set on the
    // stack and sched_setaffinity(2) on the calling process.
    unsafe {
        command.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(core, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// User + system CPU seconds of `children` so far (Linux `/proc`).
fn cpu_of(children: &[std::process::Child]) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    children
        .iter()
        .filter_map(|c| std::fs::read_to_string(format!("/proc/{}/stat", c.id())).ok())
        .filter_map(|stat| {
            // Fields after the command's closing parenthesis; utime and stime are the 14th
            // and 15th of the line.
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            Some(fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?)
        })
        .sum::<f64>()
        / ticks
}

/// A template of `seconds` at 1280×720, 30 fps: ten-second clips of a title, a sliding
/// box and a growing badge, crossfading into each other.
async fn long_template(
    store: &Store,
    seconds: u32,
) -> anyhow::Result<reelfarm_domain::template::stored::TemplateRecord> {
    let clips = seconds.div_ceil(10).max(1);
    let clip_seconds = f64::from(seconds) / f64::from(clips);
    let clips: Vec<_> = (0..clips)
        .map(|i| {
            json!({
                "id": format!("c{i}"),
                "duration": clip_seconds + if i + 1 < clips { 0.5 } else { 0.0 },
                "transition": { "kind": "crossfade", "duration": 0.5 },
                "layers": [
                    { "id": format!("bg{i}"), "kind": "shape", "x": 0, "y": 0, "width": 1280, "height": 720,
                      "color": if i % 2 == 0 { "#1f3a5f" } else { "#5f1f3a" } },
                    { "id": format!("box{i}"), "kind": "shape", "x": 80, "y": 420, "width": 360, "height": 200,
                      "color": "#e0a030", "animations": [{ "kind": "slide_in", "duration": 2.0, "direction": "left" }] },
                    { "id": format!("badge{i}"), "kind": "shape", "shape": "rounded_rectangle", "radius": 40,
                      "x": 820, "y": 360, "width": 320, "height": 320, "color": "#40c0ff",
                      "animations": [{ "kind": "scale", "from": 0.3, "to": 1.2 }] },
                    { "id": format!("title{i}"), "kind": "text", "text": format!("Part {} of the long video", i + 1),
                      "x": 80, "y": 80, "width": 1120, "height": 160,
                      "font": { "family": "Liberation Sans", "size": 84, "color": "#ffffff" },
                      "animations": [{ "kind": "fade_in", "duration": 1.0 }] }
                ]
            })
        })
        .collect();
    let document = json!({
        "version": 1, "name": "Split bench",
        "canvas": { "width": 1280, "height": 720, "fps": 30, "background": "#000000" },
        "clips": clips,
    });
    let id = TemplateId::generate();
    let new = NewTemplate {
        blob_prefix: reelfarm_domain::template::stored::blob_prefix(&id),
        id,
        name: "Split bench".into(),
        owner_user_id: None,
        public: true,
        category: String::new(),
        tags: Vec::new(),
        json: document.to_string(),
        duration_ms: i64::from(seconds) * 1000,
        quality: Quality::P720,
        files: Default::default(),
        thumb_key: None,
        preview_key: None,
    };
    Ok(store.create_template(&new).await?)
}
