//! The conversion of an upload into its renditions: a unit of work in its owner's
//! account's share, claimed by a `convert.v1` token on a conversion slot
//! ([`Pool::Conversions`]), converted in the sandbox while its lease is kept, and ended
//! with the asset's outcome in one transaction by the attempt that holds it (a late
//! attempt, taken over after its lease ran out, changes nothing).
//!
//! [`Pool::Conversions`]: reelfarm_backends::store::Pool

use std::path::Path;

use reelfarm_backends::consumer::Outcome;
use reelfarm_backends::store::{AssetStore, ConversionClaim, SchedulerStore, StoreError};
use reelfarm_domain::asset::{Asset, AssetKind, AssetStatus, Conversion, Rendition};
use reelfarm_domain::id::now_ms;
use tokio_util::sync::CancellationToken;

use super::claim::{hold, Step, LEASE};
use super::RenderHandler;
use crate::failure::Failure;
use crate::media::MediaError;
use crate::sandbox::Files;

impl RenderHandler {
    /// Converts the claimed upload while keeping its lease, then records the renditions or
    /// the error; a failure on our side puts it back to be retried.
    pub(super) async fn conversion_claimed(&self, claim: ConversionClaim) -> Step {
        let store = self.backends.store();
        let attempts = claim.attempts as u32;
        if claim.interrupted && attempts >= self.delivery_limit {
            let error = format!(
                "the conversion stopped its worker {} times (crash or kill) and was given up; please upload the \
                 file again or contact support",
                attempts - 1
            );
            tracing::error!(%error, "conversion given up");
            return self.fail_conversion(&claim, &error).await;
        }
        let held = hold(store, &claim, |store, claim: ConversionClaim| async move {
            store.heartbeat_conversion(&claim, LEASE).await
        });
        let stop = &held.stop;
        let result = tokio::select! {
            result = self.convert(&claim, stop) => result,
            // Deleted meanwhile, or taken over by another worker.
            () = stop.cancelled() => return Step::Again,
        };
        let error = match result {
            Ok(true) => {
                tracing::info!("asset converted");
                return Step::Ended(Outcome::Done);
            }
            Ok(false) => return Step::Again,
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempts < self.delivery_limit => {
                tracing::warn!(error = %e, "conversion will be retried");
                let retry_at = now_ms() + self.backends.bus().retry_delay(attempts).as_millis() as i64;
                if let Err(e) = store.release_conversion(&claim, retry_at).await {
                    tracing::warn!(error = %e, "conversion not put back to pending");
                }
                return Step::Again;
            }
            Err(Failure::Transient(e) | Failure::Remote(e)) => {
                // The details are ours (endpoints, database errors): log them, show a summary.
                tracing::error!(error = %e, attempts, "conversion failed on our side; giving up");
                "the conversion failed on our side; please upload the file again".to_string()
            }
            Err(Failure::Permanent(e) | Failure::Spent(e)) => e,
        };
        tracing::warn!(%error, "conversion failed");
        self.fail_conversion(&claim, &error).await
    }

    async fn fail_conversion(&self, claim: &ConversionClaim, error: &str) -> Step {
        match self.backends.store().fail_conversion(&claim.asset_id, claim.attempts, error).await {
            Ok(true) => Step::Ended(Outcome::Done),
            Ok(false) => Step::Again,
            Err(e) => Step::Ended(Outcome::Retry(format!("recording the failure: {e}"))),
        }
    }

    /// Converts the asset of `claim` in the sandbox and records its renditions: whether
    /// this attempt ended the unit (`false`: the asset went, or another attempt holds it).
    async fn convert(&self, claim: &ConversionClaim, stop: &CancellationToken) -> Result<bool, Failure> {
        let store = self.backends.store();
        let asset = match store.asset(&claim.asset_id).await {
            Ok(asset) => asset,
            Err(StoreError::NotFound(_)) => return Ok(false), // deleted meanwhile
            Err(e) => return Err(e.into()),
        };
        if asset.status != AssetStatus::Processing {
            // Ended by an earlier attempt that could not say so: the unit is done.
            return Ok(store.fail_conversion(&asset.id, claim.attempts, "").await?);
        }
        let original_key = asset.original_key.clone().ok_or_else(|| Failure::Permanent("no uploaded file".into()))?;
        let dir = tempfile::Builder::new().prefix("convert-").tempdir_in(&self.work_dir)?;
        let input = dir.path().join("input");
        let out = dir.path().join("out");
        tokio::fs::create_dir(&out).await?;
        self.backends.blobs().get_to_file(&original_key, &input).await?;

        let converted = tokio::select! {
            converted = self.sandbox.convert(&input, &out, &self.media_limits) => converted,
            // Dropping the conversion kills its child.
            () = stop.cancelled() => return Ok(false),
        };
        let converted = converted.map_err(|e| match e {
            MediaError::Io(e) => Failure::Transient(format!("work files: {e}")),
            e => Failure::Permanent(e.to_string()),
        })?;

        let conversion = self.store_renditions(&asset, (&original_key, &input), &out, converted).await?;
        if store.finish_conversion(&asset.id, claim.attempts, &conversion).await? {
            return Ok(true);
        }
        if let Err(StoreError::NotFound(_)) = store.asset(&asset.id).await {
            // Deleted while we converted: nothing refers to the new files.
            self.backends.blobs().delete_prefix(&format!("{}/", asset.blob_prefix)).await?;
        }
        Ok(false)
    }

    /// Uploads every new file under the asset's prefix; the original stays where it is.
    async fn store_renditions(
        &self,
        asset: &Asset,
        (original_key, original_file): (&str, &Path),
        out_dir: &Path,
        converted: Files,
    ) -> Result<Conversion, Failure> {
        let mut renditions = Vec::with_capacity(converted.renditions.len());
        let mut thumb_key = None;
        for r in &converted.renditions {
            let original = r.role == "original";
            let (key, file) = if original {
                (original_key.to_string(), original_file.to_path_buf())
            } else {
                // The sandbox checked the name: a regular file in the output directory.
                let file = out_dir.join(&r.name);
                let key = format!("{}/{}", asset.blob_prefix, r.name);
                self.backends.blobs().put_file(&key, &file, &r.content_type).await?;
                (key, file)
            };
            if r.role == "thumb" {
                thumb_key = Some(key.clone());
            }
            renditions.push(Rendition {
                key,
                role: r.role.clone(),
                content_type: r.content_type.clone(),
                format: r.format.clone(),
                width: if original { converted.width } else { r.width },
                height: if original { converted.height } else { r.height },
                codec: r.codec.clone(),
                bitrate: r.bitrate,
                duration: if original { converted.duration } else { r.duration },
                size: tokio::fs::metadata(&file).await?.len(),
            });
        }
        Ok(Conversion {
            kind: match converted.asset_type.as_str() {
                "sprite" => AssetKind::Sprite,
                "svg" => AssetKind::Svg,
                "video" => AssetKind::Video,
                "audio" => AssetKind::Sound,
                _ => AssetKind::Lottie,
            },
            duration_ms: converted.duration.map(|s| (s * 1000.0).round() as i64),
            alpha: converted.alpha,
            thumb_key: thumb_key.ok_or_else(|| Failure::Permanent("the conversion made no thumbnail".into()))?,
            renditions,
            worker: self.worker_id.clone(),
        })
    }
}
