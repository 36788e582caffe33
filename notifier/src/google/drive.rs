//! `upload-cloudstorage`: the video goes to the user's Google Drive (Drive API v3
//! `files.create`, resumable) as a file named `title` in the folder whose id is `path`.

use async_trait::async_trait;
use serde_json::{json, Value};

use reelfarm_backends::{Backends, Config};
use reelfarm_domain::integration::Provider;
use reelfarm_domain::notification::Notification;

use super::oauth::Auth;
use super::resumable::{self, Initiation};
use super::{Google, UploadOptions};
use crate::channel::{Attempt, Channel, Delivered, Failed};

/// Delivers `upload-cloudstorage` notifications to Google Drive.
pub struct DriveChannel {
    google: Google,
}

impl DriveChannel {
    pub fn new(config: &Config, backends: Backends) -> anyhow::Result<DriveChannel> {
        DriveChannel::with_options(config, backends, UploadOptions::default())
    }

    pub fn with_options(config: &Config, backends: Backends, options: UploadOptions) -> anyhow::Result<DriveChannel> {
        Ok(DriveChannel { google: Google::new(config, backends, options)? })
    }
}

#[async_trait]
impl Channel for DriveChannel {
    #[tracing::instrument(skip_all, fields(delivery_id = %attempt.delivery_id, render_id = %attempt.render.render_id, attempt = attempt.number))]
    async fn attempt(&self, attempt: &Attempt<'_>) -> Result<Delivered, Failed> {
        let Notification::UploadCloudstorage { title, path } = attempt.notification else {
            return Err(Failed::permanent("not a cloud-storage upload"));
        };
        if !attempt.render.succeeded() {
            return Err(Failed::permanent("the render failed; there is no video to upload"));
        }
        let account = self.google.account(&attempt.render.user_id, Provider::Gdrive).await?;
        let mut auth = Auth::new(&self.google, Provider::Gdrive, account);
        let source = self.google.source(attempt.render).await?;
        let init = Initiation {
            what: "Google Drive",
            // supportsAllDrives: `path` may be a folder of a shared drive.
            url: format!("{}/upload/drive/v3/files?uploadType=resumable&supportsAllDrives=true", self.google.api_url),
            metadata: json!({ "name": title, "parents": [path], "mimeType": source.content_type }),
        };
        let uploaded = resumable::upload(&mut auth, &source, &init, resumable::kept_session(attempt.state)).await?;
        let Some(id) = uploaded.resource.get("id").and_then(Value::as_str) else {
            return Err(Failed::permanent(format!(
                "Google Drive accepted the file but answered no id: {}",
                uploaded.resource
            )));
        };
        tracing::info!(file_id = id, "video uploaded to Google Drive");
        Ok(Delivered { status_code: Some(uploaded.status), result: Some(json!({ "file_id": id })) })
    }
}
