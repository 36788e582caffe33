//! The performance bars of the conversion issue, measured against the ffmpeg CLI.
//! Ignored by default (minutes of work); run in release mode:
//!
//! ```sh
//! cargo test -p reelfarm-worker --release -- --ignored --nocapture bench_
//! ```

use std::time::{Duration, Instant};

use super::*;

fn timed(work: impl FnOnce()) -> Duration {
    let start = Instant::now();
    work();
    start.elapsed()
}

fn cli(args: &[&str]) {
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .status()
        .expect("ffmpeg");
    assert!(status.success(), "ffmpeg {args:?}");
}

/// 1080p, 60 s, into 1080p/720p/480p: one decode (ours) vs three CLI runs with the same
/// encoder settings. Bar: ours ≤ 0.7× the CLI.
#[test]
#[ignore]
fn bench_video_1080p_60s_three_renditions() {
    let s = Scratch::new();
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=1920x1080:r=30:d=60",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:d=60",
            "-c:v",
            "libx264",
            "-preset",
            "medium",
            "-crf",
            "18",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-b:a",
            "192k",
            "-shortest",
        ],
        "in1080.mp4",
    );
    let input_str = input.to_str().expect("utf-8").to_owned();
    let out = s.path("cli");
    std::fs::create_dir(&out).expect("dir");
    let cli_time = timed(|| {
        for h in [1080, 720, 480] {
            let target = out.join(format!("{h}.mp4")).to_str().expect("utf-8").to_owned();
            let scale = format!("scale=-2:{h}");
            cli(&[
                "-i",
                &input_str,
                "-vf",
                &scale,
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
                &target,
            ]);
        }
    });
    let ours = timed(|| {
        s.convert(&input);
    });
    let ratio = ours.as_secs_f64() / cli_time.as_secs_f64();
    println!("video 1080p 60 s → 3 renditions: ours {ours:.2?}, 3× ffmpeg CLI {cli_time:.2?}, ratio {ratio:.3}");
}

/// A 24 MP JPEG into its renditions vs the ffmpeg CLI scaling it to the same four sizes
/// in one run (one decode, split, four scales and encodes). Bar: ours ≤ 1.0×.
#[test]
#[ignore]
fn bench_jpeg_24mp_renditions() {
    let s = Scratch::new();
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=6000x4000",
            "-frames:v",
            "1",
            "-q:v",
            "3",
        ],
        "in24.jpg",
    );
    let input_str = input.to_str().expect("utf-8").to_owned();
    let out = s.path("cli");
    std::fs::create_dir(&out).expect("dir");
    let target = |n: u32| out.join(format!("{n}.jpg")).to_str().expect("utf-8").to_owned();
    let graph =
        "[0:v]split=4[a][b][c][d];[a]scale=1920:-2[o1];[b]scale=1280:-2[o2];[c]scale=640:-2[o3];[d]scale=320:-2[o4]";
    let (t1, t2, t3, t4) = (target(1920), target(1280), target(640), target(320));
    let mut one_run = Duration::MAX;
    let mut four_runs = Duration::MAX;
    let mut ours = Duration::MAX;
    for _ in 0..3 {
        one_run = one_run.min(timed(|| {
            cli(&[
                "-i",
                &input_str,
                "-filter_complex",
                graph,
                "-map",
                "[o1]",
                "-q:v",
                "3",
                &t1,
                "-map",
                "[o2]",
                "-q:v",
                "3",
                &t2,
                "-map",
                "[o3]",
                "-q:v",
                "3",
                &t3,
                "-map",
                "[o4]",
                "-q:v",
                "3",
                &t4,
            ]);
        }));
        four_runs = four_runs.min(timed(|| {
            for (w, t) in [(1920, &t1), (1280, &t2), (640, &t3), (320, &t4)] {
                cli(&["-i", &input_str, "-vf", &format!("scale={w}:-2"), "-q:v", "3", t]);
            }
        }));
        ours = ours.min(timed(|| {
            let fresh = Scratch::new();
            convert(&input, &fresh.out(), &Limits::default(), &|_| {}).expect("convert");
        }));
    }
    println!(
        "jpeg 24 MP → 4 renditions + thumb: ours {ours:.2?}; ffmpeg one run {one_run:.2?} (ratio {:.3}); four runs {four_runs:.2?} (ratio {:.3})",
        ours.as_secs_f64() / one_run.as_secs_f64(),
        ours.as_secs_f64() / four_runs.as_secs_f64()
    );
}

/// Converts the file named by `REELFARM_BENCH_INPUT` once and prints the wall time: a
/// harness for profiling (`perf`, `/usr/bin/time`) one conversion.
#[test]
#[ignore]
fn bench_convert_one_file() {
    let Some(input) = std::env::var_os("REELFARM_BENCH_INPUT") else {
        println!("set REELFARM_BENCH_INPUT to a file to convert");
        return;
    };
    let s = Scratch::new();
    let mut converted = None;
    let wall = timed(|| converted = Some(s.convert(Path::new(&input))));
    println!("converted {} in {wall:.2?}", Path::new(&input).display());
    for r in converted.iter().flat_map(|c| &c.renditions) {
        println!(
            "  {:?} {}×{} {} bytes",
            r.role,
            r.width.unwrap_or(0),
            r.height.unwrap_or(0),
            r.size
        );
    }
}
