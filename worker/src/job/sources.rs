//! Where a render's sources come from: the template's stored files and library assets
//! from the blob store (an asset's converted rendition that fits the layer), addresses
//! through the guarded outbound client within the unit's deadline, their bytes sniffed
//! against what the layer takes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reelfarm_backends::store::{AssetStore, StoreError};
use reelfarm_domain::asset::AssetStatus;
use reelfarm_domain::cost;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::template::{Source, Template, VariableType};
use reelfarm_outbound::{FetchLimits, OutboundError};

use super::RenderHandler;
use crate::failure::Failure;
use crate::render::Quality;

/// Most bytes the addresses of one unit of work may give, all together.
pub(super) const MAX_DOWNLOAD_BYTES: u64 = 2 << 30;
/// Longest the fetches of one unit of work may take, all together: counted in the unit's
/// deadline, so that slow sources shorten the time left to render, not lengthen it.
pub(super) const FETCH_TIME: Duration = Duration::from_secs(300);
/// Longest an address may send nothing (no answer, no more of its body).
pub(super) const FETCH_IDLE: Duration = Duration::from_secs(60);

impl RenderHandler {
    /// Fetches the sources `wanted` of `template` into `dir` (but those `ready` already)
    /// before `deadline`, the addresses' bytes together at most [`MAX_DOWNLOAD_BYTES`];
    /// returns each with its local file.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fetch_sources(
        &self,
        template: &Template,
        wanted: Vec<Source>,
        record: &TemplateRecord,
        quality: Quality,
        dir: &Path,
        ready: Vec<(Source, PathBuf)>,
        deadline: Instant,
    ) -> Result<Vec<(Source, PathBuf)>, Failure> {
        let blobs = self.backends.blobs();
        let mut fetched = ready;
        let mut downloaded = 0;
        for (i, source) in wanted.into_iter().enumerate() {
            if fetched.iter().any(|(s, _)| *s == source) {
                continue;
            }
            // Unique in `dir`, which may hold files of other calls (previews keep theirs).
            let target = dir.join(format!("source-{i}-{}", reelfarm_domain::token::random_base62(8)));
            match &source {
                Source::File { file } => {
                    let key = record.files.get(file).ok_or_else(|| {
                        Failure::Transient(format!("template {} has no stored file {file:?}", record.id))
                    })?;
                    blobs.get_to_file(key, &target).await?;
                }
                Source::Asset { asset } => {
                    let asset = match self.backends.store().named_asset(asset).await {
                        Ok(a) if a.status == AssetStatus::Finished => a,
                        Ok(_) | Err(StoreError::NotFound(_)) => {
                            return Err(Failure::Permanent(format!("asset {asset:?} is no longer available")))
                        }
                        Err(e) => return Err(e.into()),
                    };
                    let (width, height) = cost::source_box(template, &source, quality);
                    blobs.get_to_file(&asset.render_source(width, height).0, &target).await?;
                }
                Source::Url { url } => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        let limit = FETCH_TIME.as_secs();
                        return Err(Failure::Spent(format!(
                            "fetching the sources took longer than this video's time (at most {limit} s of fetching)"
                        )));
                    }
                    let limits = FetchLimits {
                        max_bytes: MAX_DOWNLOAD_BYTES - downloaded,
                        timeout: left.min(FETCH_TIME),
                        idle: FETCH_IDLE,
                    };
                    let got = self.outbound.fetch_to_file(url, &target, &limits).await;
                    downloaded += got.map_err(|e| fetch_failure(url, e))?.bytes;
                    for media in media_of(template, &source) {
                        check_sniffed(&target, media)
                            .map_err(|problem| Failure::Permanent(format!("{url}: {problem}")))?;
                    }
                }
            }
            fetched.push((source, target));
        }
        Ok(fetched)
    }
}

fn fetch_failure(url: &str, e: OutboundError) -> Failure {
    if e.is_retryable() {
        Failure::Remote(format!("could not fetch {url}: {e}"))
    } else {
        Failure::Permanent(format!("could not fetch {url}: {e}"))
    }
}

/// What the layers using `source` take from it.
fn media_of(template: &Template, source: &Source) -> Vec<VariableType> {
    let layers = template.clips.iter().flat_map(|c| &c.layers).filter(|l| l.content.source() == Some(source));
    let soundtrack = template.soundtrack.as_ref().filter(|s| &s.source == source).map(|_| VariableType::Sound);
    let mut media = Vec::new();
    for m in layers.filter_map(|l| l.content.variable_type()).chain(soundtrack) {
        if !media.contains(&m) {
            media.push(m);
        }
    }
    media
}

/// Checks the first bytes of a downloaded file against what the layer takes: a file
/// recognised as another kind (a web page, a document, an image for a video) is refused
/// before any decoder sees it. Unrecognised bytes are left to the decoders.
fn check_sniffed(path: &Path, media: VariableType) -> Result<(), String> {
    use std::io::Read;
    let mut head = vec![0u8; 8192];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).map_err(|e| e.to_string())?;
    head.truncate(n);
    let text = String::from_utf8_lossy(&head[..n.min(512)]).trim_start().to_ascii_lowercase();
    if reelfarm_backends::blob::media_type::looks_like_svg(&head) {
        return if media == VariableType::Image {
            Ok(())
        } else {
            Err("is an SVG image, not a video or sound file".into())
        };
    }
    if text.starts_with("<!doctype html") || text.starts_with("<html") {
        return Err("is a web page, not a media file".into());
    }
    let Some(kind) = infer::get(&head) else { return Ok(()) };
    let ok = match kind.matcher_type() {
        _ if media == VariableType::Captions => false,
        // Animated GIF and WebP pictures play as videos (a still one shows as an image).
        infer::MatcherType::Image => {
            media == VariableType::Image
                || (media == VariableType::Video && matches!(kind.mime_type(), "image/gif" | "image/webp"))
        }
        infer::MatcherType::Video => matches!(media, VariableType::Video | VariableType::Sound),
        infer::MatcherType::Audio => media == VariableType::Sound,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        let wanted = match media {
            VariableType::Image => "an image",
            VariableType::Video => "a video",
            VariableType::Sound | VariableType::Text => "a sound file",
            VariableType::Captions => "an SRT or WebVTT file",
        };
        Err(format!("is {} ({}), not {wanted}", kind.mime_type(), kind.extension()))
    }
}
