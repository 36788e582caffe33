//! The `preview` service: one frame of a template version with values applied,
//! drawn by the renderer's own compositor ([`render::snapshot`]) and answered as a JPEG.
//!
//! An editing session asks for many frames of one template version: the sources fetched
//! for it stay in a directory of their own between calls (the [`PREVIEW_CACHE`] most
//! recently used versions, [`KEPT_SOURCES`] sources each), so only a value that brings a
//! new source fetches anything,
//! and frames are drawn in a sandboxed child of the worker kept for the session (one per
//! cached version, ended after a minute without a frame), which keeps what it decoded
//! ([`render::SnapshotCache`]): a photo is decoded once (up to `still_cache` bytes of
//! pictures), each source probed once, and the decoders of video layers stay open where
//! their last frame was (up to `video_cache` bytes), so scrubbing forward goes on decoding
//! and the frame of an edit is not decoded again.
//! Sound does not show: sound layers and the soundtrack are left out before anything is
//! fetched, and speech is never synthesised for a preview.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reelfarm_backends::bus::Service;
use reelfarm_backends::store::{StoreError, TemplateVersionStore};
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::preview::{PreviewAnswer, PreviewCall};
use reelfarm_domain::template::values::apply_values_with;
use reelfarm_domain::template::{Content, Source, Template};
use tokio_util::sync::CancellationToken;

use super::RenderHandler;
use crate::failure::Failure;
use crate::render::{self, Quality, RenderError};
use crate::sandbox::PreviewChild;

/// Template versions whose fetched sources are kept.
pub(super) const PREVIEW_CACHE: NonZeroUsize = NonZeroUsize::new(8).unwrap();
/// Sources kept for one template version: past this, the oldest a frame does not use
/// are deleted (each value tried in an editing session would otherwise stay on disk).
const KEPT_SOURCES: usize = 16;
/// A session's child asked nothing for this long is ended.
const PREVIEW_CHILD_IDLE: Duration = Duration::from_secs(60);
/// Wait before serving again after the bus refused.
const RESERVE_PAUSE: Duration = Duration::from_secs(1);

/// The sources fetched for previews of one template version.
#[derive(Default)]
pub(super) struct Fetched {
    dir: Option<tempfile::TempDir>,
    files: Vec<(Source, Arc<KeptFile>)>,
    /// The sandboxed child drawing this version's frames, while it is of use.
    child: Option<PreviewChild>,
}

/// A fetched source's file, deleted when its last holder lets go of it: a frame being
/// drawn keeps the files it reads even when a later call of the same session forgets them.
#[derive(Debug)]
struct KeptFile(PathBuf);

impl Drop for KeptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// By template version and quality (the rendition of an asset depends on the output size).
pub(super) type PreviewCache =
    std::sync::Mutex<lru::LruCache<(TemplateId, i64, Quality), Arc<tokio::sync::Mutex<Fetched>>>>;

impl RenderHandler {
    /// Answers preview calls, `concurrency` at a time, until `shutdown`.
    pub async fn serve_previews(self: Arc<Self>, concurrency: u16, shutdown: CancellationToken) {
        let bus = self.backends.bus().clone();
        while !shutdown.is_cancelled() {
            let mut calls = match bus.serve(Service::Preview, concurrency).await {
                Ok(calls) => calls,
                Err(e) => {
                    tracing::warn!(error = %e, "previews: cannot serve; trying again");
                    tokio::select! { _ = shutdown.cancelled() => return, _ = tokio::time::sleep(RESERVE_PAUSE) => continue }
                }
            };
            let mut sweep = tokio::time::interval(PREVIEW_CHILD_IDLE / 2);
            loop {
                let call = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = sweep.tick() => {
                        self.end_idle_previews();
                        continue;
                    }
                    call = calls.next() => call,
                };
                let Some(call) = call else { break };
                let handler = self.clone();
                tokio::spawn(async move {
                    let answer = handler.preview(&call.body).await;
                    if let Err(e) = call.answer(answer.to_bytes()).await {
                        tracing::debug!(error = %e, "previews: answer not sent");
                    }
                });
            }
        }
    }

    #[tracing::instrument(name = "preview", skip_all)]
    async fn preview(&self, body: &[u8]) -> PreviewAnswer {
        let call = match PreviewCall::from_bytes(body) {
            Ok(call) => call,
            Err(e) => return PreviewAnswer::Failed(format!("undecodable preview call: {e}")),
        };
        match self.draw(&call).await {
            Ok(Ok(jpeg)) => PreviewAnswer::Frame(jpeg),
            Ok(Err(e @ RenderError::TimedOut { .. })) => PreviewAnswer::Busy(e.to_string()),
            Ok(Err(e)) if e.is_bad_input() => PreviewAnswer::Refused(e.to_string()),
            Ok(Err(e)) => PreviewAnswer::Failed(e.to_string()),
            Err(Failure::Permanent(e) | Failure::Remote(e)) => PreviewAnswer::Refused(e),
            Err(Failure::Spent(e)) => PreviewAnswer::Busy(e),
            Err(Failure::Transient(e)) => PreviewAnswer::Failed(e),
        }
    }

    /// The frame of `call`, or why drawing it failed; `Err` when it could not be drawn at
    /// all (the template, its values or its sources).
    async fn draw(&self, call: &PreviewCall) -> Result<Result<Vec<u8>, RenderError>, Failure> {
        let record = match self.backends.store().template_at(&call.template_id, Some(call.version)).await {
            Err(StoreError::NotFound(_)) => return Err(Failure::Permanent("the template or version is gone".into())),
            found => found?,
        };
        let template: Template = serde_json::from_str(call.document.as_deref().unwrap_or(&record.json))
            .map_err(|e| Failure::Transient(format!("template {} document: {e}", record.id)))?;
        let mut applied = apply_values_with(&template, &call.values, &self.tts.voices).map_err(|problems| {
            let lines: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
            Failure::Permanent(format!("the values do not fit the template: {}", lines.join("; ")))
        })?;
        applied.soundtrack = None;
        for clip in &mut applied.clips {
            clip.layers.retain(|layer| !matches!(layer.content, Content::Sound(_)));
        }

        let entry = {
            let mut cache = self.previews.lock().expect("preview cache lock");
            cache.get_or_insert((record.id.clone(), record.version, call.quality), Default::default).clone()
        };
        let mut fetched = entry.lock().await;
        // The work directory's hourly sweep may have taken the directory of a long session.
        if !fetched.dir.as_ref().is_some_and(|dir| dir.path().exists()) {
            fetched.dir = Some(tempfile::Builder::new().prefix("preview-").tempdir_in(&self.work_dir)?);
            fetched.files.clear();
            fetched.child = None;
        }
        // A file the work directory's sweep took is fetched again.
        let ready = fetched.files.iter().filter(|(_, f)| f.0.exists()).map(|(s, f)| (s.clone(), f.0.clone())).collect();
        let dir = fetched.dir.as_ref().expect("made above").path().to_path_buf();
        let wanted = render::sources(&applied);
        let deadline = std::time::Instant::now() + super::sources::FETCH_TIME;
        let paths = self.fetch_sources(&applied, wanted.clone(), &record, call.quality, &dir, ready, deadline).await?;
        fetched.files = held(paths, std::mem::take(&mut fetched.files));
        forget_oldest(&mut fetched.files, &wanted);

        // Drawn in the session's sandboxed child, one frame at a time (the entry stays
        // locked), which keeps what it decoded for the next frame.
        let mut child = match fetched.child.take().filter(|c| c.usable()) {
            Some(child) => child,
            None => {
                let limits = &self.media_limits;
                let started = self.sandbox.previews(&dir, call.quality, self.preview_caches, limits).await;
                started.map_err(|e| Failure::Transient(format!("starting the preview sandbox: {e}")))?
            }
        };
        let sources = fetched.files.iter().map(|(s, f)| (s.clone(), f.0.clone())).collect();
        let drawn = child.frame(&applied, sources, call.at, &self.media_limits.memory).await;
        if child.usable() {
            fetched.child = Some(child);
        }
        Ok(drawn)
    }

    /// Ends the preview children asked nothing for [`PREVIEW_CHILD_IDLE`]: what they
    /// decoded and the memory they hold go back.
    fn end_idle_previews(&self) {
        let entries: Vec<_> =
            self.previews.lock().expect("preview cache lock").iter().map(|(_, e)| e.clone()).collect();
        for entry in entries {
            if let Ok(mut fetched) = entry.try_lock() {
                if fetched.child.as_ref().is_some_and(|c| c.idle() >= PREVIEW_CHILD_IDLE) {
                    fetched.child = None;
                }
            }
        }
    }
}

/// The files `fetched` (in that order), each under the holder it had in `before` if it had
/// one; what is left of `before` is let go.
fn held(fetched: Vec<(Source, PathBuf)>, mut before: Vec<(Source, Arc<KeptFile>)>) -> Vec<(Source, Arc<KeptFile>)> {
    let mut files = Vec::with_capacity(fetched.len());
    for (source, path) in fetched {
        let file = match before.iter().position(|(_, f)| f.0 == path) {
            Some(i) => before.swap_remove(i).1,
            None => Arc::new(KeptFile(path)),
        };
        files.push((source, file));
    }
    files
}

/// Lets go of the files of the oldest sources not in `wanted` while more than
/// [`KEPT_SOURCES`] are kept (`files` in the order they were fetched); each is deleted once
/// no frame being drawn holds it.
fn forget_oldest(files: &mut Vec<(Source, Arc<KeptFile>)>, wanted: &[Source]) {
    let mut excess = files.len().saturating_sub(KEPT_SOURCES);
    files.retain(|(source, _)| {
        if excess == 0 || wanted.contains(source) {
            return true;
        }
        excess -= 1;
        false
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_the_oldest_sources_not_drawn_are_deleted_once_no_frame_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        let url = |n: usize| Source::Url { url: format!("http://127.0.0.1:9/{n}.png") };
        let paths: Vec<(Source, PathBuf)> = (0..KEPT_SOURCES + 3)
            .map(|n| {
                let path = dir.path().join(format!("source-{n}"));
                std::fs::write(&path, b"picture").unwrap();
                (url(n), path)
            })
            .collect();
        let mut files = held(paths.clone(), Vec::new());
        // A frame of another call is still being drawn from source 2.
        let drawing = files[2].clone();
        // This call fetched nothing new, and draws the oldest source and the newest.
        files = held(paths, files);
        let wanted = [url(0), url(KEPT_SOURCES + 2)];
        forget_oldest(&mut files, &wanted);
        let kept: Vec<Source> = files.iter().map(|(s, _)| s.clone()).collect();
        let expected: Vec<Source> = [0].into_iter().chain(4..KEPT_SOURCES + 3).map(url).collect();
        assert_eq!(kept, expected);
        let on_disk = || std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(on_disk(), KEPT_SOURCES + 1);
        assert!(!dir.path().join("source-1").exists() && dir.path().join("source-2").exists());
        drop(drawing);
        assert_eq!(on_disk(), KEPT_SOURCES);
        assert!(!dir.path().join("source-2").exists() && dir.path().join("source-0").exists());
    }
}
