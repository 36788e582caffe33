//! The thumb and preview of a template saved through the API: a unit of work in its
//! owner's account's share (claimed by a `template_media.v1` or any other token), the same
//! 480p preview video and JPEG thumb an import makes, rendered from the template's
//! defaults and recorded only while the version is still the current one (a later save
//! asks for its own).

use reelfarm_backends::consumer::Outcome;
use reelfarm_backends::store::{MediaClaim, SchedulerStore, StoreError, TemplateStore, TemplateVersionStore};
use reelfarm_domain::id::{now_ms, TemplateId};
use reelfarm_domain::template::Template;
use tokio_util::sync::CancellationToken;

use super::claim::{hold, Step, LEASE};
use super::RenderHandler;
use crate::failure::Failure;
use crate::render::{self, Quality, RenderSettings};
use crate::sandbox::Piece;

impl RenderHandler {
    /// Makes the claimed thumb and preview of a template version while keeping its lease,
    /// then ends the unit, or puts it back to be retried. Given up, the template shows the
    /// previous ones (or the placeholder).
    pub(super) async fn media_claimed(&self, claim: MediaClaim) -> Step {
        let store = self.backends.store();
        let attempts = claim.attempts as u32;
        if claim.interrupted && attempts >= self.delivery_limit {
            tracing::error!("the template's media stopped their worker {} times; given up", attempts - 1);
            return self.end_media(&claim).await;
        }
        let held =
            hold(store, &claim, |store, claim: MediaClaim| async move { store.heartbeat_media(&claim, LEASE).await });
        let stop = &held.stop;
        let result = tokio::select! {
            result = self.make_template_media(&claim.template_id, claim.version, stop) => result,
            // A later save asked for other media, or another worker took these over.
            () = stop.cancelled() => return Step::Again,
        };
        match result {
            Ok(()) => {}
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempts < self.delivery_limit => {
                tracing::warn!(error = %e, "the template's media will be retried");
                let retry_at = now_ms() + self.backends.bus().retry_delay(attempts).as_millis() as i64;
                if let Err(e) = store.release_media(&claim, retry_at).await {
                    tracing::warn!(error = %e, "template media not put back to pending");
                }
                return Step::Again;
            }
            Err(Failure::Transient(e) | Failure::Remote(e) | Failure::Permanent(e) | Failure::Spent(e)) => {
                tracing::warn!(error = %e, "the template's thumb and preview were not made");
            }
        }
        self.end_media(&claim).await
    }

    async fn end_media(&self, claim: &MediaClaim) -> Step {
        match self.backends.store().end_media(claim).await {
            Ok(_) => Step::Ended(Outcome::Done),
            Err(e) => Step::Ended(Outcome::Retry(format!("ending the template's media: {e}"))),
        }
    }

    async fn make_template_media(
        &self,
        id: &TemplateId,
        version: i64,
        stop: &CancellationToken,
    ) -> Result<(), Failure> {
        let store = self.backends.store();
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
        let (mp4, jpg) = (dir.path().join("preview.mp4"), dir.path().join("thumb.jpg"));
        let settings = RenderSettings {
            quality,
            max_seconds: Some(reelfarm_domain::preview::TEMPLATE_PREVIEW_SECONDS),
            stop: stop.clone(),
            ..RenderSettings::default()
        };
        let deadline = self.unit_deadline(&template, &settings);
        let wanted = render::sources(&template);
        let fetched = self.fetch_sources(&template, wanted, &record, quality, dir.path(), Vec::new(), deadline).await?;
        let piece = Piece::Whole { out: mp4.clone(), thumb: jpg.clone() };
        // An operator's public template keeps its sounds as the operator's.
        let account = record.owner_user_id.as_ref().map_or("", |u| u.as_str());
        self.render(&template, fetched, settings.until(deadline), None, dir.path(), piece, account).await?;

        let prefix = format!("{}/v{version}", record.blob_prefix);
        let (thumb_key, preview_key) = (format!("{prefix}/thumb.jpg"), format!("{prefix}/preview.mp4"));
        let blobs = self.backends.blobs();
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
