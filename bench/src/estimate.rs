//! `reelfarm bench estimate`: the cost estimate of every example template
//! (`reelfarm_domain::cost::Estimate`) beside its measured render — CPU-seconds (user and
//! system time of a `reelfarm render` child, from `getrusage(RUSAGE_CHILDREN)`) and peak
//! RSS. Each must be within a factor of 2 of what was measured.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{anyhow, Context};
use reelfarm_domain::cost::Estimate;
use reelfarm_domain::output::Output;
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::{Source, Template};

use super::mib;
use super::render::wait_peak;
use reelfarm_server::bootstrap::examples::{write_files, EXAMPLES};

/// How far an estimate may be from the measurement, either way.
const FACTOR: f64 = 2.0;

pub fn run(quality: Quality) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    write_files(dir.path(), &EXAMPLES.iter().collect::<Vec<_>>())?;
    println!("estimate bench: every example at {quality}, each rendered by `reelfarm render` in a child process");
    println!(
        "{:<20} {:>9} {:>9} {:>7} {:>12} {:>12} {:>7} {:>5}",
        "example", "est CPU s", "CPU s", "ratio", "est memory", "peak RSS", "ratio", "bar"
    );
    let mut failed = false;
    for example in EXAMPLES {
        let file = dir.path().join(format!("{}.json", example.stem));
        let template = Template::from_json(std::fs::read(&file)?).map_err(|e| anyhow!("{}: {e}", example.stem))?;
        let sizes = |source: &Source| video_size(dir.path(), source);
        let estimate = Estimate::of(&template, quality, &Output::default(), &sizes);
        let (cpu, rss) = measured(dir.path(), &file, quality)?;
        let (cpu_ratio, memory_ratio) = (estimate.cpu_seconds / cpu, estimate.peak_memory as f64 / rss as f64);
        let within = |r: f64| (1.0 / FACTOR..=FACTOR).contains(&r);
        let pass = within(cpu_ratio) && within(memory_ratio);
        failed |= !pass;
        println!(
            "{:<20} {:>9.2} {:>9.2} {:>6.2}× {:>12} {:>12} {:>6.2}× {:>5}",
            example.stem,
            estimate.cpu_seconds,
            cpu,
            cpu_ratio,
            mib(estimate.peak_memory),
            mib(rss),
            memory_ratio,
            if pass { "PASS" } else { "FAIL" }
        );
    }
    println!(
        "bar: CPU-seconds and peak memory each within {FACTOR}× of the measured render; {}",
        if failed { "some FAILED" } else { "all PASS" }
    );
    if failed {
        anyhow::bail!("an estimate is more than {FACTOR}× off");
    }
    Ok(())
}

/// The declared frame size of a video `file` source, as the api knows a library asset's.
fn video_size(dir: &Path, source: &Source) -> Option<(u32, u32)> {
    let Source::File { file } = source else { return None };
    let probe = reelfarm_worker::media::probe(&dir.join(file), &Default::default()).ok()?;
    Some((probe.width?, probe.height?)).filter(|_| probe.video_codec.is_some())
}

/// The CPU-seconds and peak RSS of `reelfarm render` making `file` at `quality`.
fn measured(dir: &Path, file: &Path, quality: Quality) -> anyhow::Result<(f64, u64)> {
    let before = children_cpu();
    let started = Instant::now();
    let child = super::this_binary()?
        .args(["render", "--quality", quality.as_str(), "-o"])
        .arg(dir.join("out.mp4"))
        .arg(file)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting `reelfarm render`")?;
    let (_, rss) = wait_peak(child, started, "`reelfarm render`")?;
    Ok((children_cpu() - before, rss))
}

/// User and system CPU-seconds of every child waited for so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
