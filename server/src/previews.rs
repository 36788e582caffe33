//! The worker's renderer behind the template import's [`PreviewRenderer`] port: sources
//! fetched (assets from the blob store, addresses downloaded), then the template's first
//! seconds rendered on this machine into a preview MP4 and a thumb JPEG.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reelfarm_app::templates::PreviewRenderer;
use reelfarm_backends::{Blobs, Store};
use reelfarm_domain::cost::Limits;
use reelfarm_domain::template::{Source, Template};
use reelfarm_worker::render::{self, Quality, RenderSettings};

use crate::sources::download;
use reelfarm_backends::store::AssetStore;

/// Renders previews in this process, as `reelfarm render` does.
pub struct LocalPreviews<'a> {
    pub store: &'a Store,
    pub blobs: &'a Blobs,
    /// Longest the preview render may take.
    pub time_limit: Duration,
    /// What a render may ask of this machine (`Config::render_limits`).
    pub limits: Limits,
}

#[async_trait::async_trait]
impl PreviewRenderer for LocalPreviews<'_> {
    async fn render_preview(
        &self,
        template: &Template,
        files: &BTreeMap<String, PathBuf>,
        mp4: &Path,
        jpg: &Path,
    ) -> Result<(), String> {
        let work = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let client =
            reqwest::Client::builder().connect_timeout(Duration::from_secs(20)).build().map_err(|e| e.to_string())?;
        let mut fetched: Vec<(Source, PathBuf)> =
            files.iter().map(|(f, p)| (Source::File { file: f.clone() }, p.clone())).collect();
        for (i, source) in render::sources(template).into_iter().enumerate() {
            let target = work.path().join(format!("source-{i}"));
            match &source {
                Source::File { .. } => continue,
                Source::Asset { asset } => {
                    let found = self.store.named_asset(asset).await.map_err(|e| format!("asset {asset}: {e}"))?;
                    let original = found.original_key.ok_or_else(|| format!("asset {asset} has no original"))?;
                    self.blobs
                        .get_to_file(&original, &target)
                        .await
                        .map_err(|e| format!("fetching asset {asset}: {e}"))?;
                }
                Source::Url { url } => download(&client, url, &target).await.map_err(|e| format!("{e:#}"))?,
            }
            fetched.push((source, target));
        }
        let settings = RenderSettings {
            quality: Quality::of_preview(template.canvas.width, template.canvas.height),
            time_limit: self.time_limit,
            limits: reelfarm_worker::media::Limits { template: self.limits, ..Default::default() },
            max_seconds: Some(reelfarm_domain::preview::TEMPLATE_PREVIEW_SECONDS),
            ..RenderSettings::default()
        };
        let (template, outputs) = (template.clone(), (mp4.to_path_buf(), jpg.to_path_buf()));
        tokio::task::spawn_blocking(move || {
            let resolve = |s: &Source| fetched.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
            render::render(&template, &resolve, &settings, &outputs.0, &outputs.1, &|_| {})
        })
        .await
        .map_err(|e| format!("the render stopped: {e}"))?
        .map(drop)
        .map_err(|e| e.to_string())
    }
}
