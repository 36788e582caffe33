//! `reelfarm bench convert`: the conversion engine against the ffmpeg CLI doing the same
//! renditions with the same encoder settings, in one run on generated media.
//! Bars (issue: asset libraries): a 1080p 60 s video into three renditions ≤ 0.7× three
//! separate `ffmpeg` runs; a 24 MP JPEG into its renditions ≤ 1.0× one `ffmpeg` scale run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_worker::media::{self, Limits};

fn ffmpeg(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ffmpeg").args(["-hide_banner", "-v", "error", "-y"]).args(args).output()
        .context("running ffmpeg (the baseline needs the ffmpeg CLI)")?;
    if !out.status.success() {
        bail!("ffmpeg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

fn timed(work: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    work()?;
    Ok(start.elapsed())
}

/// Our engine on `input`, into a fresh directory.
fn ours(input: &Path, scratch: &Path) -> anyhow::Result<Duration> {
    let out = tempfile::tempdir_in(scratch)?;
    timed(|| {
        media::convert(input, out.path(), &Limits::default(), &|_| {})?;
        Ok(())
    })
}

fn report(name: &str, ours: Duration, baseline: Duration, baseline_name: &str, bar: f64) {
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "{name}: reelfarm {:.2} s, {baseline_name} {:.2} s, ratio {ratio:.3} (bar ≤ {bar}): {}",
        ours.as_secs_f64(),
        baseline.as_secs_f64(),
        if ratio <= bar { "PASS" } else { "FAIL" }
    );
}

pub fn run(seconds: u32, rounds: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scratch = dir.path();
    println!("generating inputs in {}…", scratch.display());
    let video = scratch.join("in1080.mp4");
    let d = seconds.to_string();
    ffmpeg(&[
        "-f", "lavfi", "-i", &format!("testsrc2=s=1920x1080:r=30:d={d}"),
        "-f", "lavfi", "-i", &format!("sine=f=440:d={d}"),
        "-c:v", "libx264", "-preset", "medium", "-crf", "18", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-b:a", "192k", "-shortest", path(&video)?,
    ])?;
    let jpeg = scratch.join("in24.jpg");
    ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=6000x4000", "-frames:v", "1", "-q:v", "3", path(&jpeg)?])?;

    let best = |f: &dyn Fn() -> anyhow::Result<Duration>| -> anyhow::Result<Duration> {
        (0..rounds.max(1)).map(|_| f()).try_fold(Duration::MAX, |m, d| d.map(|d| m.min(d)))
    };

    // Three CLI runs, one per rendition: libx264 veryfast CRF 23, AAC 128k, faststart.
    let cli_video = best(&|| {
        timed(|| {
            for h in [1080, 720, 480] {
                let out = scratch.join(format!("cli{h}.mp4"));
                ffmpeg(&[
                    "-i", path(&video)?, "-vf", &format!("scale=-2:{h}"),
                    "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", path(&out)?,
                ])?;
            }
            Ok(())
        })
    })?;
    let ours_video = best(&|| ours(&video, scratch))?;
    report(&format!("video 1080p {seconds} s → 1080p/720p/480p"), ours_video, cli_video, "3× ffmpeg CLI", 0.7);

    // One CLI run: decode once, split, four scales, JPEG at the same quality.
    let graph = "[0:v]split=4[a][b][c][d];[a]scale=1920:-2[o1];[b]scale=1280:-2[o2];[c]scale=640:-2[o3];[d]scale=320:-2[o4]";
    let cli_jpeg = best(&|| {
        let outs: Vec<PathBuf> = [1920, 1280, 640, 320].iter().map(|w| scratch.join(format!("cli{w}.jpg"))).collect();
        let mut args = vec!["-i", path(&jpeg)?, "-filter_complex", graph];
        for (i, out) in outs.iter().enumerate() {
            args.extend(["-map", ["[o1]", "[o2]", "[o3]", "[o4]"][i], "-q:v", "3", path(out)?]);
        }
        timed(|| ffmpeg(&args))
    })?;
    let ours_jpeg = best(&|| ours(&jpeg, scratch))?;
    report("jpeg 24 MP → 1920/1280/640/320 + thumb", ours_jpeg, cli_jpeg, "ffmpeg CLI (one run, split)", 1.0);
    Ok(())
}

fn path(p: &Path) -> anyhow::Result<&str> {
    p.to_str().context("temp paths are UTF-8")
}
