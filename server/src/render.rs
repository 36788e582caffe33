//! `reelfarm render TEMPLATE.json [--values VALUES.json] [--quality …] -o OUT.mp4`: the
//! render engine on a template file, no server needed; the output's extension chooses
//! its format (`.webm`, `.gif`, `.mov`, `.jpg`, `.png` too). `file` sources are read next to
//! the template, `url` sources downloaded into a temporary directory first; `asset`
//! sources need the API. The render runs the same plan in the same sandboxed child as a
//! worker's (memory, time and the files it sees bounded by the kernel). A progress bar
//! shows frames, speed and time left.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use reelfarm_domain::output::{Format, Output, GIF_MAX_FPS};
use reelfarm_domain::template::values::apply_values;
use reelfarm_domain::template::{Source, Template, LOUDNESS_RANGE};
use reelfarm_worker::media::Limits;
use reelfarm_worker::render::{self, Progress, RenderSettings};
use reelfarm_worker::sandbox::{Piece, RenderPlan, RenderServices, Sandbox};
use tokio_util::sync::CancellationToken;

use crate::cli::RenderArgs;
use crate::sources::{download, local_file};

pub async fn run(args: RenderArgs) -> anyhow::Result<()> {
    let output = output_of(&args)?;
    let bytes =
        tokio::fs::read(&args.template).await.with_context(|| format!("reading {}", args.template.display()))?;
    let template = Template::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", args.template.display()))?;
    let template = match &args.values {
        Some(path) => with_values(&template, path).await?,
        None => template,
    };
    if output.transparent && template.canvas.background.is_opaque() {
        bail!(
            "--transparent: the template's background {} is opaque; give it transparency, e.g. #00000000",
            template.canvas.background
        );
    }
    // The render runs in a sandboxed child, as a worker's does, which sees this directory
    // only: every source is put there first (linked where it can be, else copied).
    let base = args.template.parent().map(Path::to_path_buf).unwrap_or_default();
    let work = tempfile::Builder::new().prefix("reelfarm-render-").tempdir().context("creating a work directory")?;
    let dir = work.path();
    let mut files: Vec<(Source, PathBuf)> = Vec::new();
    let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(20)).build()?;
    for (i, source) in render::sources(&template).into_iter().enumerate() {
        let target = dir.join(format!("source-{i}"));
        match &source {
            Source::File { file } => {
                let path = local_file(&base, file).map_err(|e| anyhow!("file {e}"))?;
                if std::fs::hard_link(&path, &target).is_err() {
                    std::fs::copy(&path, &target).with_context(|| format!("copying {}", path.display()))?;
                }
            }
            Source::Url { url } => download(&client, url, &target).await?,
            Source::Asset { asset } => bail!("asset {asset:?}: asset sources need a server (use the API)"),
        }
        files.push((source, target));
    }
    let format = output.format;
    let (made, made_thumb) = (dir.join(format!("video.{format}")), dir.join("thumb.jpg"));
    let defaults = RenderSettings::default();
    let plan = RenderPlan {
        template,
        sources: files,
        dir: dir.to_owned(),
        quality: args.quality,
        output,
        crf: defaults.crf,
        preset: defaults.preset.into(),
        threads: args.encoder_threads,
        speech: Default::default(),
        max_seconds: None,
        sounds: false,
        piece: Piece::Whole { out: made.clone(), thumb: made_thumb.clone() },
    };
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {per_sec}  ETA {eta}")
            .map_err(|e| anyhow!("progress bar: {e}"))?,
    );
    let shown = bar.clone();
    let progress = move |p: Progress| {
        shown.set_length(p.frames_total);
        shown.set_position(p.frames_done);
    };
    let stop = CancellationToken::new();
    let services = RenderServices { progress: &progress, sounds: None, stop: &stop };
    // The bundle's launcher names itself (this process is then its loader's child).
    let program = std::env::var_os("REELFARM_SANDBOX_PROGRAM").map(PathBuf::from);
    let sandbox = Sandbox::new(program).context("finding this program, to run the render in a child of it")?;
    let rendered = sandbox.render(plan, &Limits::default(), &services).await;
    bar.finish_and_clear();
    let made_output = rendered?.ok_or_else(|| anyhow!("the render made no video"))?;
    let thumb = args.output.with_extension(if format == Format::Jpg { "thumb.jpg" } else { "jpg" });
    for (from, to) in [(&made, &args.output), (&made_thumb, &thumb)] {
        if std::fs::rename(from, to).is_err() {
            std::fs::copy(from, to).with_context(|| format!("writing {}", to.display()))?;
        }
    }
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}: {}×{}, {:.2} s, {} frames, {:.1} MiB (thumbnail {})",
        args.output.display(),
        made_output.width,
        made_output.height,
        made_output.duration,
        made_output.frames,
        size as f64 / f64::from(1 << 20),
        thumb.display()
    );
    Ok(())
}

/// The output the arguments ask for: the format by the file's extension, and its
/// settings (each only where it applies, as a job's `options`).
fn output_of(args: &RenderArgs) -> anyhow::Result<Output> {
    let extension = args.output.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
    let format: Format = match extension.as_str() {
        "jpeg" => Format::Jpg,
        other => other.parse().map_err(|e| anyhow!("-o {}: {e}", args.output.display()))?,
    };
    if args.transparent && !format.can_be_transparent() {
        bail!("--transparent: a {format} cannot be transparent; use webm, mov or png");
    }
    if args.subtitles && !format.can_have_subtitles() {
        bail!("--subtitles: a {format} cannot carry a subtitle track; use mp4 or mov");
    }
    if args.still_at.is_some() && !format.is_still() {
        bail!("--still-at applies to a still (jpg or png), not to a {format}");
    }
    if (args.fps.is_some() || args.max_width.is_some()) && format != Format::Gif {
        bail!("--fps and --max-width apply to a gif, not to a {format}");
    }
    if args.fps.is_some_and(|fps| !(1..=GIF_MAX_FPS).contains(&fps)) {
        bail!("--fps must be from 1 to {GIF_MAX_FPS}");
    }
    if let Some(loudness) = args.loudness {
        if !format.has_sound() {
            bail!("--loudness: a {format} has no sound");
        }
        if !LOUDNESS_RANGE.contains(&loudness) {
            bail!("--loudness must be from -70 to -5 LUFS");
        }
    }
    Ok(Output {
        format,
        transparent: args.transparent,
        still_at: args.still_at,
        fps: args.fps,
        max_width: args.max_width,
        subtitles: args.subtitles,
        loudness: args.loudness,
    })
}

/// The template with the values file applied: a JSON object from variable id to value,
/// or an object holding one as `template_variables` (a job's `values[]` element).
async fn with_values(template: &Template, path: &Path) -> anyhow::Result<Template> {
    let bytes = tokio::fs::read(path).await.with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))?;
    let map = match value.get("template_variables") {
        Some(serde_json::Value::Object(map)) => map.clone(),
        _ => value
            .as_object()
            .cloned()
            .ok_or_else(|| anyhow!("{}: expected a JSON object of variable values", path.display()))?,
    };
    // Speech is synthesised by the workers' providers and cache; a local render would
    // quietly keep the placeholder sound instead.
    if let Some((id, _)) = map.iter().find(|(_, v)| reelfarm_domain::tts::is_speech(v)) {
        bail!(
            "{}: {id}: text-to-speech values are rendered by the service only (a job through `serve`), not by `reelfarm render`",
            path.display()
        );
    }
    apply_values(template, &map).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
        anyhow!("{}:\n{}", path.display(), lines.join("\n"))
    })
}
