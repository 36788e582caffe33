//! `upload-videosite`: the video goes to the user's YouTube channel (YouTube Data API v3
//! `videos.insert`, resumable), private unless the user changes it there, and into a
//! playlist when `playlist_id` is given (`playlistItems.insert`).

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};

use reelfarm_backends::{Backends, Config};
use reelfarm_domain::integration::Provider;
use reelfarm_domain::notification::Notification;

use super::oauth::Auth;
use super::resumable::{self, Initiation};
use super::{refusal, Google, UploadOptions};
use crate::channel::{Attempt, Channel, Delivered, Failed};

/// Longest title YouTube takes, in characters.
const TITLE_CHARS: usize = 100;
/// Longest description YouTube takes, in bytes.
const DESCRIPTION_BYTES: usize = 5000;

/// Delivers `upload-videosite` notifications to YouTube.
pub struct YouTubeChannel {
    google: Google,
}

impl YouTubeChannel {
    pub fn new(config: &Config, backends: Backends) -> anyhow::Result<YouTubeChannel> {
        YouTubeChannel::with_options(config, backends, UploadOptions::default())
    }

    pub fn with_options(config: &Config, backends: Backends, options: UploadOptions) -> anyhow::Result<YouTubeChannel> {
        Ok(YouTubeChannel { google: Google::new(config, backends, options)? })
    }
}

#[async_trait]
impl Channel for YouTubeChannel {
    #[tracing::instrument(skip_all, fields(delivery_id = %attempt.delivery_id, render_id = %attempt.render.render_id, attempt = attempt.number))]
    async fn attempt(&self, attempt: &Attempt<'_>) -> Result<Delivered, Failed> {
        let Notification::UploadVideosite { title, description, playlist_id, .. } = attempt.notification else {
            return Err(Failed::permanent("not a video-site upload"));
        };
        if !attempt.render.succeeded() {
            return Err(Failed::permanent("the render failed; there is no video to upload"));
        }
        let account = self.google.account(&attempt.render.user_id, Provider::YouTube).await?;
        let mut auth = Auth::new(&self.google, Provider::YouTube, account);
        let mut session = resumable::kept_session(attempt.state);

        // A previous attempt that uploaded the video but could not add it to the
        // playlist kept its result: only the playlist is left to do.
        let kept_video = attempt.state.and_then(|s| s["result"]["video_id"].as_str());
        let (status, video_id) = match kept_video {
            Some(id) => (200, id.to_string()),
            None => {
                let source = self.google.source(attempt.render).await?;
                let init = Initiation {
                    what: "YouTube",
                    url: format!(
                        "{}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
                        self.google.api_url
                    ),
                    metadata: metadata(title, description),
                };
                let uploaded = resumable::upload(&mut auth, &source, &init, session.clone()).await?;
                let Some(id) = uploaded.resource.get("id").and_then(Value::as_str) else {
                    return Err(Failed::permanent(format!(
                        "YouTube accepted the video but answered no id: {}",
                        uploaded.resource
                    )));
                };
                tracing::info!(video_id = id, "video uploaded to YouTube");
                let id = id.to_string();
                session = Some(uploaded.session_uri);
                (uploaded.status, id)
            }
        };

        let mut result = json!({ "video_id": video_id });
        if let Some(playlist_id) = playlist_id {
            match add_to_playlist(&mut auth, playlist_id, &video_id).await {
                Ok(()) => {}
                Err(failed) if failed.retryable => {
                    // Kept as the delivery's result should it be given up (the video is
                    // there either way).
                    let result = json!({ "video_id": video_id, "playlist_error": failed.error });
                    let state = json!({ "session_uri": session, "result": result });
                    return Err(Failed { state: Some(state), ..failed });
                }
                // The video is there: the delivery succeeded, and says what did not.
                Err(failed) => result["playlist_error"] = json!(failed.error),
            }
        }
        Ok(Delivered { status_code: Some(status), result: Some(result) })
    }
}

/// The `video` resource sent when opening the session: title and description as YouTube
/// takes them (no `<` or `>`, within its lengths), private.
fn metadata(title: &str, description: &str) -> Value {
    let title: String = title.chars().filter(|c| !matches!(c, '<' | '>')).take(TITLE_CHARS).collect();
    let mut description: String = description.chars().filter(|c| !matches!(c, '<' | '>')).collect();
    if description.len() > DESCRIPTION_BYTES {
        let mut cut = DESCRIPTION_BYTES;
        while !description.is_char_boundary(cut) {
            cut -= 1;
        }
        description.truncate(cut);
    }
    json!({
        "snippet": { "title": title, "description": description },
        "status": { "privacyStatus": "private" },
    })
}

/// `playlistItems.insert` of the video at the end of the playlist.
async fn add_to_playlist(auth: &mut Auth<'_>, playlist_id: &str, video_id: &str) -> Result<(), Failed> {
    let http = auth.google.http.clone();
    let url = format!("{}/youtube/v3/playlistItems?part=snippet", auth.google.api_url);
    let body = Bytes::from(
        json!({
            "snippet": {
                "playlistId": playlist_id,
                "resourceId": { "kind": "youtube#video", "videoId": video_id },
            }
        })
        .to_string(),
    );
    let answer = auth
        .send(true, |token| {
            http.post(&url)
                .bearer_auth(token.unwrap_or_default())
                .header("content-type", "application/json; charset=UTF-8")
                .body(body.clone())
        })
        .await?;
    let res = answer.map_err(|e| Failed::transient(format!("YouTube did not answer the playlist insert: {e}")))?;
    let status = res.status().as_u16();
    if res.status().is_success() {
        tracing::info!(playlist_id, "video added to the playlist");
        return Ok(());
    }
    let body = res.text().await.unwrap_or_default();
    Err(refusal(&format!("adding the video to playlist {playlist_id}: YouTube"), status, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_private_and_within_youtube_limits() {
        let m = metadata("A <b>bold</b> title", "desc");
        assert_eq!(m["snippet"]["title"], "A bbold/b title");
        assert_eq!(m["status"]["privacyStatus"], "private");
        let long = metadata(&"é".repeat(150), &"é".repeat(3000));
        assert_eq!(long["snippet"]["title"].as_str().unwrap().chars().count(), 100);
        assert_eq!(long["snippet"]["description"].as_str().unwrap().len(), 5000);
    }
}
