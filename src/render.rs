//! `reelfarm render TEMPLATE.json [--values VALUES.json] [--quality …] -o OUT.mp4`: the
//! render engine on a template file, no server needed. `file` sources are read next to
//! the template, `url` sources downloaded into a temporary directory first; `asset`
//! sources need the API. A progress bar shows frames, speed and time left.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use reelfarm_shared::template::values::apply_values;
use reelfarm_shared::template::{Source, Template};
use reelfarm_worker::render::{self, Progress, Quality, RenderSettings};
use tokio::io::AsyncWriteExt;

use crate::cli::{QualityArg, RenderArgs};

/// Largest file a `url` source may be.
const MAX_DOWNLOAD: u64 = 4 << 30;

pub async fn run(args: RenderArgs) -> anyhow::Result<()> {
    let bytes = tokio::fs::read(&args.template)
        .await
        .with_context(|| format!("reading {}", args.template.display()))?;
    let template = Template::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", args.template.display()))?;
    let template = match &args.values {
        Some(path) => with_values(&template, path).await?,
        None => template,
    };
    let base = args.template.parent().map(Path::to_path_buf).unwrap_or_default();
    let downloads = tempfile::tempdir().context("creating a temporary directory")?;
    let mut files: Vec<(Source, PathBuf)> = Vec::new();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .build()?;
    for (i, source) in render::sources(&template).into_iter().enumerate() {
        let path = match &source {
            Source::File { file } => local_file(&base, file)?,
            Source::Url { url } => download(&client, url, &downloads.path().join(format!("source-{i}"))).await?,
            Source::Asset { asset } => bail!("asset {asset:?}: asset sources need a server (use the API)"),
        };
        files.push((source, path));
    }
    let settings = RenderSettings {
        quality: quality(args.quality),
        ..RenderSettings::default()
    };
    let out = args.output.clone();
    let thumb = args.output.with_extension("jpg");
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {per_sec}  ETA {eta}")
            .map_err(|e| anyhow!("progress bar: {e}"))?,
    );
    let shown = bar.clone();
    let thumb_path = thumb.clone();
    let output = tokio::task::spawn_blocking(move || {
        let resolve = |s: &Source| files.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
        let progress = |p: Progress| {
            shown.set_length(p.frames_total);
            shown.set_position(p.frames_done);
        };
        render::render(&template, &resolve, &settings, &out, &thumb_path, &progress)
    })
    .await?;
    bar.finish_and_clear();
    let output = output?;
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}: {}×{}, {:.2} s, {} frames, {:.1} MiB (thumbnail {})",
        args.output.display(),
        output.width,
        output.height,
        output.duration,
        output.frames,
        size as f64 / f64::from(1 << 20),
        thumb.display()
    );
    drop(downloads);
    Ok(())
}

fn quality(arg: QualityArg) -> Quality {
    match arg {
        QualityArg::Default => Quality::Default,
        QualityArg::P480 => Quality::P480,
        QualityArg::P720 => Quality::P720,
        QualityArg::P1080 => Quality::P1080,
    }
}

/// The template with the values file applied: a JSON object from variable id to value,
/// or an object holding one as `template_variables` (a job's `values[]` element).
async fn with_values(template: &Template, path: &Path) -> anyhow::Result<Template> {
    let bytes = tokio::fs::read(path)
        .await
        .with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))?;
    let map = match value.get("template_variables") {
        Some(serde_json::Value::Object(map)) => map.clone(),
        _ => value
            .as_object()
            .cloned()
            .ok_or_else(|| anyhow!("{}: expected a JSON object of variable values", path.display()))?,
    };
    apply_values(template, &map).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
        anyhow!("{}:\n{}", path.display(), lines.join("\n"))
    })
}

/// A `file` source: relative to the template's directory, never absolute or above it.
fn local_file(base: &Path, file: &str) -> anyhow::Result<PathBuf> {
    let relative = Path::new(file);
    let safe = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !safe || file.contains('\\') {
        bail!("file {file:?}: must be a relative path inside the template's directory (not absolute, no `..`)");
    }
    let path = base.join(relative);
    if !path.is_file() {
        bail!("file {file:?}: {} does not exist", path.display());
    }
    Ok(path)
}

/// Downloads a `url` source to `path` (streamed, at most [`MAX_DOWNLOAD`] bytes).
async fn download(client: &reqwest::Client, url: &str, path: &Path) -> anyhow::Result<PathBuf> {
    let mut response = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("downloading {url}"))?;
    if !response.status().is_success() {
        bail!("downloading {url}: HTTP {}", response.status());
    }
    let mut file = tokio::fs::File::create(path)
        .await
        .with_context(|| format!("creating {}", path.display()))?;
    let mut written: u64 = 0;
    while let Some(chunk) = response.chunk().await.with_context(|| format!("downloading {url}"))? {
        written += chunk.len() as u64;
        if written > MAX_DOWNLOAD {
            bail!("downloading {url}: larger than {} GiB", MAX_DOWNLOAD >> 30);
        }
        file.write_all(&chunk).await?;
    }
    file.flush().await?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sources_stay_inside_the_template_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), b"x").unwrap();
        assert_eq!(local_file(dir.path(), "a.png").unwrap(), dir.path().join("a.png"));
        for bad in ["/etc/passwd", "../a.png", "media/../../a.png", "..\\a.png"] {
            let err = local_file(dir.path(), bad).unwrap_err().to_string();
            assert!(err.contains("relative path"), "{bad}: {err}");
        }
        assert!(local_file(dir.path(), "missing.png")
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
    }
}
