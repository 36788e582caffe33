//! The thumb and preview of a template saved through the API (`template_media.v1` on the
//! render queue): the same 480p preview video and JPEG thumb an import makes, rendered
//! from the template's defaults and recorded only while the version is still the
//! current one (a later save asks for its own).

use reelfarm_backends::consumer::Outcome;
use reelfarm_backends::store::StoreError;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::{Source, Template};

use super::RenderHandler;
use crate::failure::Failure;
use crate::render::{self, Quality, RenderSettings};

impl RenderHandler {
    pub(super) async fn template_media(&self, id: &TemplateId, version: i64, attempt: u32) -> Outcome {
        match self.make_template_media(id, version).await {
            Ok(()) => Outcome::Done,
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempt < self.delivery_limit => Outcome::Retry(e),
            // Without them the template shows the previous ones (or the placeholder).
            Err(Failure::Transient(e) | Failure::Remote(e) | Failure::Permanent(e)) => {
                tracing::warn!(error = %e, "the template's thumb and preview were not made");
                Outcome::Done
            }
        }
    }

    async fn make_template_media(&self, id: &TemplateId, version: i64) -> Result<(), Failure> {
        let store = &self.backends.store;
        let record = match store.template(id).await {
            Ok(record) if record.version == version && !record.archived => record,
            // Replaced by a later save (which asked for its own), archived or gone.
            Ok(_) | Err(StoreError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let template: Template = serde_json::from_str(&record.json)
            .map_err(|e| Failure::Permanent(format!("template {id} document: {e}")))?;
        let (width, height) = (template.canvas.width, template.canvas.height);
        let quality = Quality::of_preview(width, height);
        let dir = tempfile::Builder::new().prefix("template-").tempdir_in(&self.work_dir)?;
        let fetched =
            self.fetch_sources(&template, render::sources(&template), &record, quality, dir.path(), Vec::new()).await?;
        let (mp4, jpg) = (dir.path().join("preview.mp4"), dir.path().join("thumb.jpg"));
        let settings = RenderSettings {
            quality,
            time_limit: self.time_limit,
            max_seconds: Some(reelfarm_domain::preview::TEMPLATE_PREVIEW_SECONDS),
            threads: self.encoder_threads,
            limits: self.media_limits.clone(),
            ..RenderSettings::default()
        };
        let outputs = (mp4.clone(), jpg.clone());
        tokio::task::spawn_blocking(move || {
            let resolve = |s: &Source| fetched.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
            render::render(&template, &resolve, &settings, &outputs.0, &outputs.1, &|_| {})
        })
        .await
        .map_err(|e| Failure::Transient(format!("preview render task: {e}")))?
        .map_err(|e| Failure::Permanent(format!("preview render: {e}")))?;

        let prefix = format!("{}/v{version}", record.blob_prefix);
        let (thumb_key, preview_key) = (format!("{prefix}/thumb.jpg"), format!("{prefix}/preview.mp4"));
        let blobs = &self.backends.blobs;
        blobs.put_file(&thumb_key, &jpg, "image/jpeg").await?;
        blobs.put_file(&preview_key, &mp4, "video/mp4").await?;
        if !store.set_template_media(id, version, &thumb_key, &preview_key).await? {
            blobs.delete_prefix(&format!("{prefix}/")).await?;
            return Ok(());
        }
        // The media of the version shown before (an import's own stay).
        let versioned = format!("{}/v", record.blob_prefix);
        for old in [record.thumb_key, record.preview_key].into_iter().flatten().filter(|k| k.starts_with(&versioned)) {
            if let Err(e) = blobs.delete(&old).await {
                tracing::warn!(key = %old, error = %e, "a replaced template thumb or preview was not removed");
            }
        }
        tracing::info!(template_id = %id, version, "template thumb and preview made");
        Ok(())
    }
}
