//! The `convert` queue: an uploaded original becomes its renditions.
//!
//! Idempotent: a message for an asset that is no longer `processing` (finished, failed,
//! deleted) changes nothing, and the result is stored together with the message id, so a
//! redelivery after a crash between storing and acking is recognised.

use std::path::PathBuf;

use async_trait::async_trait;
use reelfarm_backends::consumer::{Handler, Outcome};
use reelfarm_backends::store::{AssetStore, StoreError};
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::asset::{Asset, AssetKind, AssetStatus, Conversion, Rendition};
use reelfarm_domain::id::AssetId;
use reelfarm_domain::message::{Envelope, Message};
use tracing::Instrument;

use crate::failure::Failure;
use crate::media::{Limits, MediaError};
use crate::sandbox::{Files, Sandbox};

pub struct ConvertHandler {
    backends: Backends,
    limits: Limits,
    /// Where the conversions run: a child process each, never this one.
    sandbox: Sandbox,
    work_dir: PathBuf,
    delivery_limit: u32,
    /// This worker's name in diagnostics: host, process and a random suffix.
    worker_id: String,
}

impl ConvertHandler {
    /// `limits` are the process's ([`Limits::from_config`] once, shared with the render
    /// handler: one memory budget for every job of the worker).
    pub fn new(
        config: &Config,
        backends: Backends,
        limits: Limits,
        worker_id: String,
    ) -> anyhow::Result<ConvertHandler> {
        let work_dir = crate::work_dir(config)?;
        let sandbox = Sandbox::new(config.worker.sandbox_program.clone())?;
        Ok(ConvertHandler { backends, limits, sandbox, work_dir, delivery_limit: config.bus.delivery_limit, worker_id })
    }

    async fn convert(&self, asset_id: &AssetId, message_id: &str) -> Result<(), Failure> {
        let store = self.backends.store();
        let asset = match store.asset(asset_id).await {
            Ok(asset) => asset,
            Err(StoreError::NotFound(_)) => return Ok(()), // deleted meanwhile
            Err(e) => return Err(e.into()),
        };
        if asset.status != AssetStatus::Processing {
            return Ok(());
        }
        let original_key = asset.original_key.clone().ok_or_else(|| Failure::Permanent("no uploaded file".into()))?;
        let dir = tempfile::Builder::new().prefix("convert-").tempdir_in(&self.work_dir)?;
        let input = dir.path().join("input");
        let out = dir.path().join("out");
        tokio::fs::create_dir(&out).await?;
        self.backends.blobs().get_to_file(&original_key, &input).await?;

        let converted = self.sandbox.convert(&input, &out, &self.limits).await.map_err(|e| match e {
            MediaError::Io(e) => Failure::Transient(format!("work files: {e}")),
            e => Failure::Permanent(e.to_string()),
        })?;

        let conversion = self.store_renditions(&asset, (&original_key, &input), &out, converted).await?;
        if !store.finish_conversion(&asset.id, message_id, &conversion).await? {
            match store.asset(&asset.id).await {
                // Deleted while we converted: nothing refers to the new files.
                Err(StoreError::NotFound(_)) => {
                    self.backends.blobs().delete_prefix(&format!("{}/", asset.blob_prefix)).await?;
                }
                Err(e) => return Err(e.into()),
                Ok(_) => {} // finished by an earlier delivery
            }
        }
        Ok(())
    }

    /// Uploads every new file under the asset's prefix; the original stays where it is.
    async fn store_renditions(
        &self,
        asset: &Asset,
        (original_key, original_file): (&str, &std::path::Path),
        out_dir: &std::path::Path,
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

#[async_trait]
impl Handler for ConvertHandler {
    async fn handle(&self, envelope: &Envelope, attempt: u32) -> Outcome {
        let Message::ConvertV1 { asset_id } = &envelope.message else {
            return Outcome::Abort(format!("unexpected message {} on the convert queue", envelope.message.kind()));
        };
        let span = tracing::info_span!("convert", asset_id = %asset_id, attempt);
        let outcome = self.convert_message(asset_id, &envelope.id, attempt).instrument(span).await;
        // What the decoded frames and renditions took, the allocator keeps free.
        reelfarm_backends::allocator::give_back_free_memory();
        outcome
    }
}

impl ConvertHandler {
    /// Converts the asset of one message (in the conversion's span) and records how it ended.
    async fn convert_message(&self, asset_id: &AssetId, message_id: &str, attempt: u32) -> Outcome {
        let store = self.backends.store();
        let error = match self.convert(asset_id, message_id).await {
            Ok(()) => {
                tracing::info!("asset converted");
                return Outcome::Done;
            }
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempt < self.delivery_limit => {
                tracing::warn!(error = %e, "conversion will be retried");
                return Outcome::Retry(e);
            }
            Err(Failure::Transient(e) | Failure::Remote(e)) => {
                // The details are ours (endpoints, database errors): log them, show a summary.
                tracing::error!(error = %e, attempt, "conversion failed on our side; giving up");
                "the conversion failed on our side; please upload the file again".to_string()
            }
            Err(Failure::Permanent(e) | Failure::Spent(e)) => e,
        };
        tracing::warn!(%error, "conversion failed");
        match store.fail_conversion(asset_id, message_id, &error).await {
            Ok(_) => Outcome::Done,
            Err(e) => Outcome::Retry(format!("recording the failure: {e}")),
        }
    }
}
