//! `reelfarm bench render`: the render engine against the hand-written ffmpeg CLI
//! filtergraph making the same reference composition with the same encoder settings, in
//! one run on generated media.
//! Reference (issue: render engine): 1920×1080, 30 fps, 10 s; two 5.25 s scenes joined by
//! a 0.5 s crossfade (5 s each outside it); scene 1 a 1080p H.264 video, a two-line title
//! (first line bold) fading in at 0.5 s, a PNG logo with alpha top-right; scene 2 a 3000×2000
//! photo with a slow Ken Burns zoom and a caption; an audio bed with a 1 s fade-out;
//! libx264 veryfast CRF 23, AAC, faststart.
//! Bars: our wall time ≤ 0.75× the CLI's at 1080p and ≤ 0.70× at 720p; our peak RSS ≤ 354 MiB at 1080p.
//! Beside it, each round renders the same in a sandboxed child as workers do (`sandbox s`,
//! and its own ratio to the CLI's): what the sandbox adds to a render.
//! Each round renders ours, then the CLI's, and the round of the median ratio is reported
//! (so that the machine's drift weighs on both sides). Our time is measured in process on
//! a first render (the sound kept by earlier rounds is forgotten each round); a repeat
//! render, whose sound is written from the kept packets as a worker's later renders of the
//! template are, is shown beside it. Both peak RSS
//! values come from a child process each (`reelfarm render` on the same template JSON,
//! and `ffmpeg`), read from `/proc`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use reelfarm_domain::template::{Source, Template};
use reelfarm_worker::render::{self, Quality, RenderSettings};
use reelfarm_worker::sandbox::{Piece, RenderPlan, RenderServices, Sandbox};

use super::{mib, rss_of};

/// Time bars (issue: the engine): ours over the CLI's, at 1080p and at 720p.
const RATIO_BAR_1080: f64 = 0.75;
const RATIO_BAR_720: f64 = 0.70;
/// Memory bar of our render at 1080p: not above what it was when the time bars were set.
const RSS_BAR: u64 = 354 * 1024 * 1024;

pub(super) const TEMPLATE: &str = r##"{"version":1,"name":"reference","canvas":{"width":1920,"height":1080,"fps":30,"background":"#000000"},
 "clips":[
  {"id":"intro","duration":5.25,"transition":{"kind":"crossfade","duration":0.5},"layers":[
   {"id":"bg","kind":"video","source":{"file":"bg.mp4"},"x":0,"y":0,"width":1920,"height":1080},
   {"id":"title","kind":"text","start":0.5,"x":160,"y":300,"width":1600,"height":320,"align":"center",
    "text":"<p><b>Reference Render</b></p><p>made by reelfarm</p>",
    "font":{"family":"Liberation Sans","size":110,"color":"#ffffff"},"animations":[{"kind":"fade_in","duration":1}]},
   {"id":"logo","kind":"image","source":{"file":"logo.png"},"x":1600,"y":60,"width":260,"height":260,"fit":"contain"}]},
  {"id":"photo","duration":5.25,"layers":[
   {"id":"pic","kind":"image","source":{"file":"photo.jpg"},"x":0,"y":0,"width":1920,"height":1080,
    "animations":[{"kind":"ken_burns","from":{"x":0,"y":0,"width":1,"height":1},"to":{"x":0.1,"y":0.1,"width":0.8,"height":0.8}}]},
   {"id":"caption","kind":"text","x":100,"y":900,"width":1720,"height":120,"text":"A photo with a slow Ken Burns",
    "font":{"family":"Liberation Sans","size":64,"color":"#ffffff"}}]}],
 "soundtrack":{"source":{"file":"bed.m4a"},"fade_out":1}}"##;

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

/// The inputs: a 12 s 1080p H.264 video, a 260×260 PNG logo with alpha, a 3000×2000 JPEG
/// photo and a 12 s AAC bed.
pub(super) fn inputs(dir: &Path) -> anyhow::Result<()> {
    // The CLI's drawtext reads fonts from files: the faces our text uses, written out of
    // the binary (so the bench runs from the release bundle, away from the repository).
    for (name, bytes) in FONTS {
        std::fs::write(dir.join(name), bytes)?;
    }
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=1920x1080:r=30:d=12",
        "-c:v",
        "libx264",
        "-preset",
        "fast",
        "-b:v",
        "10M",
        "-pix_fmt",
        "yuv420p",
        &p("bg.mp4"),
    ])?;
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "color=c=orange@0.0:s=260x260,format=rgba,geq=r=255:g=140:b=0:a='if(lt(hypot(X-130,Y-130),120),255,0)'",
        "-frames:v",
        "1",
        &p("logo.png"),
    ])?;
    ffmpeg(&["-f", "lavfi", "-i", "mandelbrot=s=3000x2000", "-frames:v", "1", "-q:v", "3", &p("photo.jpg")])?;
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=f=330:d=12",
        "-f",
        "lavfi",
        "-i",
        "sine=f=495:d=12",
        "-filter_complex",
        "[0][1]amerge=inputs=2",
        "-c:a",
        "aac",
        "-b:a",
        "160k",
        &p("bed.m4a"),
    ])?;
    std::fs::write(dir.join("reference.json"), TEMPLATE)?;
    Ok(())
}

/// The encoding of the render bench's output: libx264 veryfast CRF 23 and AAC in a
/// faststart MP4.
const MP4: Encoding = Encoding {
    tail: "",
    video: "[v]",
    audio: true,
    args: &[
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
        "160k",
        "-movflags",
        "+faststart",
    ],
};

/// How the CLI baseline encodes the composed video `[v]` and sound `[aout]`.
pub(super) struct Encoding {
    /// Filters appended to the graph after `[v]` (e.g. a GIF's palette passes).
    pub(super) tail: &'static str,
    /// The label of the video mapped to the output.
    pub(super) video: &'static str,
    /// Whether the sound is mapped.
    pub(super) audio: bool,
    /// The encoders' arguments.
    pub(super) args: &'static [&'static str],
}

/// The faces of the reference composition's text, for the CLI's `drawtext`: regular, bold.
const FONTS: [(&str, &[u8]); 2] = [
    ("LiberationSans-Regular.ttf", include_bytes!("../../fonts/LiberationSans-Regular.ttf")),
    ("LiberationSans-Bold.ttf", include_bytes!("../../fonts/LiberationSans-Bold.ttf")),
];

/// The ffmpeg CLI arguments for the same composition at `height` (1080, 720 or 480),
/// encoded as `encoding` says into `out`.
pub(super) fn baseline_args(dir: &Path, height: u32, out: &Path, encoding: &Encoding) -> Vec<String> {
    let regular = dir.join(FONTS[0].0).display().to_string();
    let bold = dir.join(FONTS[1].0).display().to_string();
    let s = f64::from(height) / 1080.0;
    let (w, h) = (((1920.0 * s) as u32) & !1, height);
    let px = |v: f64| (v * s).round() as i64;
    let graph = format!(
        "[0:v]trim=0:5.25,setpts=PTS-STARTPTS,fps=30,scale={w}:{h},format=yuv420p[bg];\
         [1:v]scale={l}:{l}[logo];\
         [bg]drawtext=fontfile={bold}:text='Reference Render':fontsize={f1}:fontcolor=white:x=(w-tw)/2:y={y1}:enable='gte(t,0.5)':alpha='clip(t-0.5,0,1)',\
         drawtext=fontfile={regular}:text='made by reelfarm':fontsize={f1}:fontcolor=white:x=(w-tw)/2:y={y2}:enable='gte(t,0.5)':alpha='clip(t-0.5,0,1)'[t];\
         [t][logo]overlay={lx}:{ly}:shortest=1,format=yuv420p[a];\
         [2:v]scale={w}:{ph},crop={w}:{h},zoompan=z='1+0.25*on/158':x='0.1*iw*on/158':y='0.1*ih*on/158':d=158:s={w}x{h}:fps=30,\
         drawtext=fontfile={regular}:text='A photo with a slow Ken Burns':fontsize={f2}:fontcolor=white:x={cx}:y={cy},format=yuv420p,trim=end_frame=158[b];\
         [a][b]xfade=transition=fade:duration=0.5:offset=4.75[v];\
         [3:a]atrim=0:10,afade=t=out:st=9:d=1[aout]{tail}",
        tail = encoding.tail,
        l = px(260.0),
        f1 = px(110.0),
        y1 = px(320.0),
        y2 = px(452.0),
        lx = px(1600.0),
        ly = px(60.0),
        ph = px(1280.0),
        f2 = px(64.0),
        cx = px(100.0),
        cy = px(900.0),
    );
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    [
        "-hide_banner",
        "-v",
        "error",
        "-y",
        "-i",
        &p("bg.mp4"),
        "-loop",
        "1",
        "-framerate",
        "30",
        "-i",
        &p("logo.png"),
        "-loop",
        "1",
        "-framerate",
        "30",
        "-i",
        &p("photo.jpg"),
        "-i",
        &p("bed.m4a"),
        "-filter_complex",
        &graph,
        "-map",
        encoding.video,
    ]
    .iter()
    .chain(if encoding.audio { &["-map", "[aout]"][..] } else { &[] })
    .chain(encoding.args)
    .map(|a| a.to_string())
    .chain(["-t".into(), "10".into(), out.to_string_lossy().into_owned()])
    .collect()
}

/// Waits for `child` and returns its wall time from `started` and its peak RSS in bytes:
/// the last `VmHWM` read from `/proc` every 10 ms while it runs (`VmHWM` belongs to the
/// exec'd program alone; `wait4`'s `ru_maxrss` would include this process's memory at
/// fork time).
pub(super) fn wait_peak(mut child: Child, started: Instant, what: &str) -> anyhow::Result<(Duration, u64)> {
    let pid = child.id();
    let mut peak = 0;
    let status = loop {
        if let Some((hwm, _)) = rss_of(pid) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok((elapsed, peak))
}

fn cli(dir: &Path, height: u32) -> anyhow::Result<(Duration, u64)> {
    let args = baseline_args(dir, height, &dir.join(format!("cli-{height}.mp4")), &MP4);
    let started = Instant::now();
    let child = Command::new("ffmpeg").args(&args).stdout(Stdio::null()).spawn().context("starting ffmpeg")?;
    wait_peak(child, started, "the ffmpeg baseline")
}

fn ours(dir: &Path, template: &Template, quality: Quality, first: bool) -> anyhow::Result<Duration> {
    if first {
        render::forget_kept_sound();
    }
    let resolve = |s: &Source| match s {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let settings = RenderSettings { quality, ..RenderSettings::default() };
    let name = format!("ours-{}", quality.short_side().unwrap_or(0));
    let started = Instant::now();
    render::render(
        template,
        &resolve,
        &settings,
        &dir.join(format!("{name}.mp4")),
        &dir.join(format!("{name}.jpg")),
        &|_| {},
    )?;
    Ok(started.elapsed())
}

/// A first render of ours in a sandboxed child (`reelfarm sandbox`), as a worker runs it
/// (with the spare child `sandbox` started ahead): the confinement and the plan on top
/// of the render.
fn ours_sandboxed(sandbox: &Sandbox, dir: &Path, template: &Template, quality: Quality) -> anyhow::Result<Duration> {
    let name = format!("sandboxed-{}", quality.short_side().unwrap_or(0));
    let defaults = RenderSettings::default();
    let sources = render::sources(template)
        .into_iter()
        .filter_map(|s| match &s {
            Source::File { file } => Some((s.clone(), dir.join(file))),
            _ => None,
        })
        .collect();
    let plan = RenderPlan {
        template: template.clone(),
        sources,
        dir: dir.to_owned(),
        quality,
        output: defaults.output,
        crf: defaults.crf,
        preset: defaults.preset.into(),
        threads: defaults.threads,
        speech: Vec::new(),
        max_seconds: None,
        sounds: false,
        piece: Piece::Whole { out: dir.join(format!("{name}.mp4")), thumb: dir.join(format!("{name}.jpg")) },
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let services = RenderServices { progress: &|_| {}, sounds: None, stop: &stop };
    let limits = reelfarm_worker::media::Limits { time_limit: defaults.time_limit, ..Default::default() };
    let started = Instant::now();
    tokio::runtime::Handle::current().block_on(sandbox.render(plan, &limits, &services))?;
    Ok(started.elapsed())
}

/// `reelfarm render` in a child process, for its peak RSS.
fn ours_child(dir: &Path, height: u32) -> anyhow::Result<u64> {
    let started = Instant::now();
    let child = super::this_binary()?
        .args(["render", "--quality", &format!("{height}p"), "-o"])
        .arg(dir.join(format!("child-{height}.mp4")))
        .arg(dir.join("reference.json"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting `reelfarm render`")?;
    Ok(wait_peak(child, started, "`reelfarm render`")?.1)
}

pub(super) fn best<T>(
    rounds: u32,
    mut run: impl FnMut() -> anyhow::Result<T>,
    key: impl Fn(&T) -> u128,
) -> anyhow::Result<T> {
    let mut best: Option<T> = None;
    for _ in 0..rounds.max(1) {
        let r = run()?;
        if best.as_ref().is_none_or(|b| key(&r) < key(b)) {
            best = Some(r);
        }
    }
    best.ok_or_else(|| anyhow!("no rounds"))
}

/// What normalising the loudness may add to a render's time (best of the rounds each).
const LOUDNESS_COST_GOAL: f64 = 0.03;
/// Pairs of renders without and with the loudness target.
const LOUDNESS_PAIRS: usize = 7;

/// Runs the bench at `heights`; with `keep`, the inputs and outputs go there and stay
/// (for profiling `reelfarm render` of its `reference.json`).
pub fn run(heights: &[u32], rounds: u32, keep: Option<&Path>) -> anyhow::Result<()> {
    let temporary = tempfile::tempdir()?;
    let dir = match keep {
        Some(kept) => {
            std::fs::create_dir_all(kept).with_context(|| format!("creating {}", kept.display()))?;
            kept
        }
        None => temporary.path(),
    };
    println!("render bench: generating inputs in {}", dir.display());
    inputs(dir)?;
    let template = Template::from_json(TEMPLATE.as_bytes()).map_err(|e| anyhow!("reference template: {e}"))?;
    println!(
        "median of {} round(s), each ours then the CLI's (repeat: best of them); 10 s reference composition, libx264 veryfast CRF 23",
        rounds.max(1)
    );
    println!(
        "{:<7} {:>12} {:>8} {:>7} {:>12} {:>14} {:>14} {:>10} {:>11} {:>14}",
        "case",
        "reelfarm s",
        "CLI s",
        "ratio",
        "time bar",
        "reelfarm RSS",
        "CLI RSS",
        "repeat s",
        "sandbox s",
        "sandbox ratio"
    );
    let mut failed = false;
    let sandbox = Sandbox::new(None)?;
    // The same composition brought to −14 LUFS: what measuring and limiting its sound costs.
    let mut normalised = template.clone();
    normalised.loudness = Some(-14.0);
    for &height in heights {
        let quality: Quality = format!("{height}p").parse()?;
        // Rounds of a first render of ours, then the CLI's, one after the other, so that the
        // machine's drift weighs on both: the round of the median ratio is reported.
        // The same render in a sandboxed child, as workers run it, in the same rounds: its
        // own ratio to the CLI's (the median of its rounds).
        let mut pairs = Vec::new();
        let mut sandboxed = Vec::new();
        for _ in 0..rounds.max(1) {
            let ours_time = ours(dir, &template, quality, true)?;
            let sandbox_time = ours_sandboxed(&sandbox, dir, &template, quality)?;
            let (cli_time, cli_rss) = cli(dir, height)?;
            pairs.push((ours_time.as_secs_f64() / cli_time.as_secs_f64(), ours_time, cli_time, cli_rss));
            sandboxed.push((sandbox_time.as_secs_f64() / cli_time.as_secs_f64(), sandbox_time));
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        sandboxed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ratio, ours_time, cli_time, cli_rss) = pairs[pairs.len() / 2];
        let (sandbox_ratio, sandbox_time) = sandboxed[sandboxed.len() / 2];
        let ours_rss = ours_child(dir, height)?;
        let repeat = best(rounds, || ours(dir, &template, quality, false), |d| d.as_nanos())?;
        // The bars are at 1080p and 720p; 480p is shown for information.
        let bar = match height {
            1080 => Some(RATIO_BAR_1080),
            720 => Some(RATIO_BAR_720),
            _ => None,
        };
        let pass = bar.is_none_or(|bar| ratio <= bar);
        failed |= !pass;
        println!(
            "{:<7} {:>12.2} {:>8.2} {:>6.2}× {:>12} {:>14} {:>14} {:>10.2} {:>11.2} {:>13.2}×",
            format!("{height}p"),
            ours_time.as_secs_f64(),
            cli_time.as_secs_f64(),
            ratio,
            match (bar, pass) {
                (None, _) => "info".to_string(),
                (Some(bar), true) => format!("≤{bar}: PASS"),
                (Some(bar), false) => format!("≤{bar}: FAIL"),
            },
            mib(ours_rss),
            mib(cli_rss),
            repeat.as_secs_f64(),
            sandbox_time.as_secs_f64(),
            sandbox_ratio
        );
        // Pairs of first renders without and with the target, one after the other, so that
        // the machine's drift weighs on both: the median of the pairs' ratios.
        let mut pairs = Vec::new();
        for _ in 0..LOUDNESS_PAIRS {
            let plain = ours(dir, &template, quality, true)?.as_secs_f64();
            let loud = ours(dir, &normalised, quality, true)?.as_secs_f64();
            pairs.push((loud / plain, plain, loud));
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ratio, plain, loud) = pairs[pairs.len() / 2];
        let cost = ratio - 1.0;
        println!(
            "        loudness -14 LUFS: {plain:.2} s → {loud:.2} s, {:+.1} % (median of {LOUDNESS_PAIRS} pairs; goal ≤ {:.0} %: {})",
            100.0 * cost,
            100.0 * LOUDNESS_COST_GOAL,
            if cost <= LOUDNESS_COST_GOAL { "PASS" } else { "over" }
        );
        if height == 1080 {
            let pass = ours_rss <= RSS_BAR;
            failed |= !pass;
            println!(
                "        memory bar: reelfarm peak RSS ≤ {} at 1080p: {}",
                mib(RSS_BAR),
                if pass { "PASS" } else { "FAIL" }
            );
        }
    }
    println!(
        "bars: time ≤ {RATIO_BAR_1080}× the CLI's at 1080p, ≤ {RATIO_BAR_720}× at 720p; {}",
        if failed { "some FAILED" } else { "all PASS" }
    );
    Ok(())
}

/// The output sizes `--quality` asks for.
pub fn heights(quality: &str) -> anyhow::Result<Vec<u32>> {
    match quality {
        "1080p" => Ok(vec![1080]),
        "720p" => Ok(vec![720]),
        "480p" => Ok(vec![480]),
        "both" => Ok(vec![1080, 720]),
        "all" => Ok(vec![1080, 720, 480]),
        other => bail!("--quality {other}: expected 1080p, 720p, 480p, both or all"),
    }
}
