//! `reelfarm bench formats`: WebM and GIF outputs of the render bench's 10 s reference
//! composition against the ffmpeg CLI composing it with the same
//! hand-written filtergraph and encoding it the same way, in one run on generated media:
//! libvpx-vp9 with our settings (CRF 32, `deadline=good`, `cpu-used=4`, row-mt) and Opus
//! at 720p; `palettegen`/`paletteuse` with our settings at 480p.
//! Bar: our wall time ≤ 1.0× the CLI's for each.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use reelfarm_domain::output::{Format, Output};
use reelfarm_domain::template::{Source, Template};
use reelfarm_worker::render::{self, Quality, RenderSettings};

use super::render::{baseline_args, best, inputs, wait_peak, Encoding, TEMPLATE};

/// Time bar: ours over the CLI's.
const RATIO_BAR: f64 = 1.0;

const WEBM: Encoding = Encoding {
    tail: "",
    video: "[v]",
    audio: true,
    args: &[
        "-c:v",
        "libvpx-vp9",
        "-crf",
        "32",
        "-b:v",
        "0",
        "-deadline",
        "good",
        "-cpu-used",
        "4",
        "-row-mt",
        "1",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "libopus",
        "-b:a",
        "128k",
    ],
};

/// The GIF's palette passes as the CLI is used for them: the composed video split, one
/// branch counted into a palette, the other mapped with it (the settings of
/// `render::gif`); the composed sound goes nowhere.
const GIF: Encoding = Encoding {
    tail: ";[aout]anullsink;[v]split[g1][g2];[g1]palettegen=stats_mode=full:reserve_transparent=0[pal];\
           [g2][pal]paletteuse=dither=sierra2_4a[gif]",
    video: "[gif]",
    audio: false,
    args: &[],
};

fn cli(dir: &Path, height: u32, format: Format, encoding: &Encoding) -> anyhow::Result<Duration> {
    let out = dir.join(format!("cli-{height}.{format}"));
    let started = Instant::now();
    let child = Command::new("ffmpeg")
        .args(baseline_args(dir, height, &out, encoding))
        .stdout(Stdio::null())
        .spawn()
        .context("starting ffmpeg")?;
    Ok(wait_peak(child, started, "the ffmpeg baseline")?.0)
}

fn ours(dir: &Path, template: &Template, quality: Quality, format: Format) -> anyhow::Result<Duration> {
    render::forget_kept_sound();
    let resolve = |s: &Source| match s {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let output = Output { format, ..Output::default() };
    let settings = RenderSettings { quality, output, ..RenderSettings::default() };
    let started = Instant::now();
    render::render(template, &resolve, &settings, &dir.join(format!("ours.{format}")), &dir.join("ours.jpg"), &|_| {})?;
    Ok(started.elapsed())
}

pub fn run(rounds: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    println!("formats bench: generating inputs in {}", dir.path().display());
    inputs(dir.path())?;
    let template = Template::from_json(TEMPLATE.as_bytes()).map_err(|e| anyhow!("reference template: {e}"))?;
    println!("best of {} round(s) per side; the 10 s reference composition of `bench render`", rounds.max(1));
    println!("{:<12} {:>12} {:>8} {:>7} {:>6}", "case", "reelfarm s", "CLI s", "ratio", "bar");
    let mut failed = false;
    for (format, height, encoding) in [(Format::Webm, 720, &WEBM), (Format::Gif, 480, &GIF)] {
        let quality: Quality = format!("{height}p").parse()?;
        let ours = best(rounds, || ours(dir.path(), &template, quality, format), |d| d.as_nanos())?;
        let cli = best(rounds, || cli(dir.path(), height, format, encoding), |d| d.as_nanos())?;
        let ratio = ours.as_secs_f64() / cli.as_secs_f64();
        let pass = ratio <= RATIO_BAR;
        failed |= !pass;
        println!(
            "{:<12} {:>12.2} {:>8.2} {:>6.2}× {:>6}",
            format!("{format} {height}p"),
            ours.as_secs_f64(),
            cli.as_secs_f64(),
            ratio,
            if pass { "PASS" } else { "FAIL" }
        );
    }
    println!("bar: time ≤ {RATIO_BAR}× the CLI's; {}", if failed { "some FAILED" } else { "all PASS" });
    Ok(())
}
