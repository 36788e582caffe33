//! `reelfarm bench convert`: the conversion engine against the ffmpeg CLI doing the same
//! renditions with the same encoder settings, in one run on generated media.
//! Bars (issue: asset libraries): a 1080p 60 s video into three renditions ≤ 0.7× three
//! separate `ffmpeg` runs; a 24 MP JPEG into its renditions ≤ 1.0× one `ffmpeg` scale run.
//! The video bar is measured on a source whose 1080p rendition is a stream copy (H.264 at
//! ~10 Mbit/s, as phones and cameras write); the same video at 20 Mbit/s, above the copy
//! cap so every rendition is encoded, is reported beside it without a bar.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reelfarm_worker::media::{self, Limits, Role};

fn ffmpeg(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-y"])
        .args(args)
        .output()
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

/// Our engine on `input`, into a fresh directory; the time, and how each MP4 rendition's
/// video was made (checked after the clock stops: copied means the same packets as the
/// source's).
fn ours(input: &Path, scratch: &Path) -> anyhow::Result<(Duration, String)> {
    let out = tempfile::tempdir_in(scratch)?;
    let start = Instant::now();
    let converted = media::convert(input, out.path(), &Limits::default(), &|_| {})?;
    let elapsed = start.elapsed();
    let mut made = Vec::new();
    for r in &converted.renditions {
        if let Role::Video { short_side } = r.role {
            let copied = media::passthrough::same_video_packets(input, &r.file)?;
            made.push(format!("{short_side}p {}", if copied { "copied" } else { "encoded" }));
        }
    }
    Ok((elapsed, made.join(", ")))
}

fn report(name: &str, ours: Duration, baseline: Duration, baseline_name: &str, bar: Option<f64>) {
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64();
    let verdict = match bar {
        Some(bar) => format!("(bar ≤ {bar}): {}", if ratio <= bar { "PASS" } else { "FAIL" }),
        None => "(no bar; for comparison)".into(),
    };
    println!(
        "{name}: reelfarm {:.2} s, {baseline_name} {:.2} s, ratio {ratio:.3} {verdict}",
        ours.as_secs_f64(),
        baseline.as_secs_f64(),
    );
}

pub fn run(seconds: u32, rounds: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scratch = dir.path();
    println!("generating inputs in {}…", scratch.display());
    let d = seconds.to_string();
    // The same picture at a camera's bit rate (its 1080p rendition is a stream copy) and
    // at 20 Mbit/s, above the 12 Mbit/s copy cap (every rendition encoded).
    let videos = [("in1080.mp4", ["-crf", "18"], Some(0.7)), ("in1080-20M.mp4", ["-b:v", "20M"], None)];
    for (name, rate, _) in &videos {
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            &format!("testsrc2=s=1920x1080:r=30:d={d}"),
            "-f",
            "lavfi",
            "-i",
            &format!("sine=f=440:d={d}"),
            "-c:v",
            "libx264",
            "-preset",
            "medium",
            rate[0],
            rate[1],
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-b:a",
            "192k",
            "-shortest",
            path(&scratch.join(name))?,
        ])?;
    }
    let jpeg = scratch.join("in24.jpg");
    ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=6000x4000", "-frames:v", "1", "-q:v", "3", path(&jpeg)?])?;

    let best = |f: &dyn Fn() -> anyhow::Result<Duration>| -> anyhow::Result<Duration> {
        (0..rounds.max(1)).map(|_| f()).try_fold(Duration::MAX, |m, d| d.map(|d| m.min(d)))
    };

    for (name, rate, bar) in videos {
        let video = scratch.join(name);
        // Three CLI runs, one per rendition: libx264 veryfast CRF 23, AAC 128k, faststart.
        let cli_video = best(&|| {
            timed(|| {
                for h in [1080, 720, 480] {
                    let out = scratch.join(format!("cli{h}.mp4"));
                    ffmpeg(&[
                        "-i",
                        path(&video)?,
                        "-vf",
                        &format!("scale=-2:{h}"),
                        "-c:v",
                        "libx264",
                        "-preset",
                        "veryfast",
                        "-crf",
                        "23",
                        "-pix_fmt",
                        "yuv420p",
                        "-c:a",
                        "aac",
                        "-b:a",
                        "128k",
                        "-movflags",
                        "+faststart",
                        path(&out)?,
                    ])?;
                }
                Ok(())
            })
        })?;
        let made = std::cell::RefCell::new(String::new());
        let ours_video = best(&|| {
            ours(&video, scratch).map(|(t, m)| {
                *made.borrow_mut() = m;
                t
            })
        })?;
        let name = format!("video 1080p {seconds} s ({} {}) → {}", rate[0], rate[1], made.borrow());
        report(&name, ours_video, cli_video, "3× ffmpeg CLI", bar);
    }

    // One CLI run: decode once, split, four scales, JPEG at the same quality.
    let graph =
        "[0:v]split=4[a][b][c][d];[a]scale=1920:-2[o1];[b]scale=1280:-2[o2];[c]scale=640:-2[o3];[d]scale=320:-2[o4]";
    let cli_jpeg = best(&|| {
        let outs: Vec<PathBuf> = [1920, 1280, 640, 320].iter().map(|w| scratch.join(format!("cli{w}.jpg"))).collect();
        let mut args = vec!["-i", path(&jpeg)?, "-filter_complex", graph];
        for (i, out) in outs.iter().enumerate() {
            args.extend(["-map", ["[o1]", "[o2]", "[o3]", "[o4]"][i], "-q:v", "3", path(out)?]);
        }
        timed(|| ffmpeg(&args))
    })?;
    let ours_jpeg = best(&|| ours(&jpeg, scratch).map(|(t, _)| t))?;
    report("jpeg 24 MP → 1920/1280/640/320 + thumb", ours_jpeg, cli_jpeg, "ffmpeg CLI (one run, split)", Some(1.0));

    // What the sandbox adds: the same conversions in a child of this binary, as a worker
    // runs them, against the engine in this process (measured just above).
    let small = scratch.join("in-small.png");
    ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=640x480", "-frames:v", "1", path(&small)?])?;
    let ours_small = best(&|| ours(&small, scratch).map(|(t, _)| t))?;
    for (name, input, in_process) in
        [("png 640×480 (start-up dominated)", &small, ours_small), ("jpeg 24 MP", &jpeg, ours_jpeg)]
    {
        let in_sandbox = best(&|| sandboxed(input, scratch))?;
        report(&format!("{name} in its sandbox"), in_sandbox, in_process, "in process", None);
    }
    Ok(())
}

/// The conversion of `input` in a sandboxed child (`reelfarm sandbox`), as a worker runs
/// it: the time until its answer was checked.
fn sandboxed(input: &Path, scratch: &Path) -> anyhow::Result<Duration> {
    let out = tempfile::tempdir_in(scratch)?;
    let sandbox = reelfarm_worker::sandbox::Sandbox::new(None)?;
    let start = Instant::now();
    tokio::runtime::Handle::current().block_on(sandbox.convert(input, out.path(), &Limits::default()))?;
    Ok(start.elapsed())
}

fn path(p: &Path) -> anyhow::Result<&str> {
    p.to_str().context("temp paths are UTF-8")
}
