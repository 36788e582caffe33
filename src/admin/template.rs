//! `reelfarm admin template import`: validates a template file, stores its placeholder
//! media, renders its thumb and preview from its defaults, and records it.
//!
//! Nothing is visible until everything is in place: the files go under the template's
//! unguessable blob prefix first, the record is written last, and a failure on the way
//! removes what was stored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use reelfarm_backends::store::{template_blob_prefix, NewTemplate, StoreError, TemplateRecord};
use reelfarm_backends::{Blobs, Store};
use reelfarm_domain::asset::AssetStatus;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::{Source, Template};
use reelfarm_worker::render::{self, Quality, RenderSettings};

use crate::sources::{download, local_file};

/// Who a template is imported for.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// Owning user (name or id). Required unless `public`.
    pub owner: Option<String>,
    /// Visible to every user.
    pub public: bool,
    /// Longest the preview render may take.
    pub time_limit: std::time::Duration,
    /// What a render of the template may ask of the farm (`Config::render_limits`).
    pub limits: reelfarm_domain::cost::Limits,
}

/// Imports the template file at `path`; returns the stored template.
pub async fn import(
    store: &Store,
    blobs: &Blobs,
    path: &Path,
    options: &ImportOptions,
) -> anyhow::Result<TemplateRecord> {
    import_as(store, blobs, path, options, None).await
}

/// [`import`] under a fixed template id (`None`: a new one). Importing an id that exists
/// fails with `StoreError::Conflict` and leaves the stored template as it was.
pub async fn import_as(
    store: &Store,
    blobs: &Blobs,
    path: &Path,
    options: &ImportOptions,
    id: Option<&TemplateId>,
) -> anyhow::Result<TemplateRecord> {
    let bytes = tokio::fs::read(path).await.with_context(|| format!("cannot read {}", path.display()))?;
    let template = Template::from_json(&bytes).map_err(|e| {
        let problems = e.errors();
        let lines: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
        anyhow::anyhow!(
            "{} is not a valid template ({} problem(s)):\n{}",
            path.display(),
            problems.len(),
            lines.join("\n")
        )
    })?;
    if let Err(problems) = options.limits.check(&template, Quality::Default, &|_| None) {
        let lines: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
        bail!("{} asks more than this deployment renders:\n{}", path.display(), lines.join("\n"));
    }
    let owner = match &options.owner {
        Some(who) => Some(store.find_user(who).await.with_context(|| format!("--owner {who}"))?.id),
        None if options.public => None,
        None => bail!("--owner USER is required unless the template is --public"),
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let local = check_sources(store, &template, dir).await?;

    let id = id.cloned().unwrap_or_else(TemplateId::generate);
    let prefix = template_blob_prefix(&id);
    let stored = store_and_render(store, blobs, &template, &local, &prefix, options).await;
    let (files, thumb_key, preview_key) = match stored {
        Ok(stored) => stored,
        Err(e) => {
            remove_prefix(blobs, &prefix).await;
            return Err(e);
        }
    };
    let (canvas, duration) = (&template.canvas, template.duration());
    let new = NewTemplate {
        id,
        name: template.name.clone(),
        owner_user_id: owner,
        public: options.public,
        category: template.category.clone(),
        tags: template.tags.clone(),
        json: String::from_utf8(bytes).context("template file is not UTF-8")?,
        duration_ms: (duration * 1000.0).round() as i64,
        quality: Quality::of_canvas(canvas.width, canvas.height),
        blob_prefix: prefix.clone(),
        files,
        thumb_key: Some(thumb_key),
        preview_key: Some(preview_key),
    };
    match store.create_template(&new).await {
        Ok(record) => Ok(record),
        Err(e) => {
            remove_prefix(blobs, &prefix).await;
            Err(e.into())
        }
    }
}

/// The local files of the template's `file` sources, after checking every source can be
/// had: files exist below `dir`, assets exist and are converted. Errors name the source's
/// JSON path.
async fn check_sources(store: &Store, template: &Template, dir: &Path) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut local = BTreeMap::new();
    let mut problems = Vec::new();
    for (path, source, _) in template.sources_at() {
        match source {
            Source::File { file } => match local_file(dir, file) {
                Ok(found) => {
                    local.insert(file.clone(), found);
                }
                Err(problem) => problems.push(format!("  {path}.file: {problem}")),
            },
            Source::Asset { asset } => match store.named_asset(asset).await {
                Ok(a) if a.status == AssetStatus::Finished && a.original_key.is_some() => {}
                Ok(a) => problems.push(format!("  {path}.asset: asset {asset} is {}, not finished", a.status.public())),
                Err(StoreError::NotFound(_)) => problems.push(format!("  {path}.asset: no asset {asset}")),
                Err(e) => return Err(e.into()),
            },
            Source::Url { .. } => {}
        }
    }
    if !problems.is_empty() {
        bail!("sources of the template cannot be used:\n{}", problems.join("\n"));
    }
    Ok(local)
}

/// Uploads the `file` sources and renders and uploads the thumb and preview; returns the
/// file keys by path, the thumb key and the preview key.
async fn store_and_render(
    store: &Store,
    blobs: &Blobs,
    template: &Template,
    local: &BTreeMap<String, PathBuf>,
    prefix: &str,
    options: &ImportOptions,
) -> anyhow::Result<(BTreeMap<String, String>, String, String)> {
    let mut files = BTreeMap::new();
    for (i, (file, path)) in local.iter().enumerate() {
        let key = format!("{prefix}/media/{i}-{}", key_segment(file));
        blobs.put_file(&key, path, content_type_of(file)).await.with_context(|| format!("storing {file}"))?;
        files.insert(file.clone(), key);
    }

    let work = tempfile::tempdir().context("temporary directory")?;
    let client = reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(20)).build()?;
    let mut fetched: Vec<(Source, PathBuf)> =
        local.iter().map(|(f, p)| (Source::File { file: f.clone() }, p.clone())).collect();
    for (i, source) in render::sources(template).into_iter().enumerate() {
        let target = work.path().join(format!("source-{i}"));
        match &source {
            Source::File { .. } => continue,
            Source::Asset { asset } => {
                let original = store.named_asset(asset).await?.original_key.context("asset has no original")?;
                blobs.get_to_file(&original, &target).await.with_context(|| format!("fetching asset {asset}"))?;
            }
            Source::Url { url } => download(&client, url, &target).await?,
        }
        fetched.push((source, target));
    }

    let (mp4, jpg) = (work.path().join("preview.mp4"), work.path().join("thumb.jpg"));
    let quality = Quality::of_preview(template.canvas.width, template.canvas.height);
    let settings = RenderSettings {
        quality,
        time_limit: options.time_limit,
        limits: reelfarm_worker::media::Limits { template: options.limits, ..Default::default() },
        max_seconds: Some(reelfarm_domain::preview::TEMPLATE_PREVIEW_SECONDS),
        ..RenderSettings::default()
    };
    let (template, outputs) = (template.clone(), (mp4.clone(), jpg.clone()));
    tokio::task::spawn_blocking(move || {
        let resolve = |s: &Source| fetched.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
        render::render(&template, &resolve, &settings, &outputs.0, &outputs.1, &|_| {})
    })
    .await
    .context("the preview render stopped")?
    .context("rendering the preview")?;

    let (thumb_key, preview_key) = (format!("{prefix}/thumb.jpg"), format!("{prefix}/preview.mp4"));
    blobs.put_file(&thumb_key, &jpg, "image/jpeg").await.context("storing the thumb")?;
    blobs.put_file(&preview_key, &mp4, "video/mp4").await.context("storing the preview")?;
    Ok((files, thumb_key, preview_key))
}

async fn remove_prefix(blobs: &Blobs, prefix: &str) {
    if let Err(e) = blobs.delete_prefix(&format!("{prefix}/")).await {
        tracing::warn!(%prefix, error = %e, "files of a failed template import were not removed");
    }
}

/// The file name of `file` as one blob key segment: letters, digits, `-`, `_`, `.`.
fn key_segment(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() {
        "file".into()
    } else {
        safe.into()
    }
}

/// The media type of a placeholder file, from its extension.
fn content_type_of(file: &str) -> &'static str {
    let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "heic" | "heif" => "image/heic",
        "mp4" | "m4v" => "video/mp4",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "mkv" => "video/x-matroska",
        "mp3" => "audio/mpeg",
        "m4a" | "aac" => "audio/mp4",
        "wav" => "audio/wav",
        "ogg" | "oga" => "audio/ogg",
        "flac" => "audio/flac",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_become_safe_key_segments() {
        assert_eq!(key_segment("media/photo.jpg"), "photo.jpg");
        assert_eq!(key_segment("Mein Foto (1).PNG"), "Mein_Foto__1_.PNG");
        assert_eq!(key_segment("..hidden"), "hidden");
        assert_eq!(key_segment("a/"), "file");
        assert_eq!(content_type_of("x/Y.JPG"), "image/jpeg");
        assert_eq!(content_type_of("noext"), "application/octet-stream");
    }
}
