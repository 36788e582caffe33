//! One long render on many workers. The worker that claims a render longer
//! than `split_after` does not render it: it splits it (`PartStore::split_render`) into its
//! sound, chunks of `split_chunk` seconds and their join, and each part is then claimed
//! like a render by whichever worker's token comes next (`render::split` says why the
//! joined video is the one a single render would make).
//!
//! A chunk fetches only what the template shows (no sound sources, no speech), renders
//! its frames into a video-only MP4 and uploads it beside the render's files
//! (`{prefix}/parts/`); the chunk holding the thumbnail's frame uploads the thumbnail. The
//! sound part fetches everything heard, synthesises the speech and writes the encoded
//! sound (or the fleet's kept one). The join downloads them, copies every packet into the
//! video, uploads it and ends the render; the parts' files go once it ended.

use std::path::Path;

use reelfarm_backends::store::{PartKind, PartRecord, PartStore, SchedulerStore};
use reelfarm_domain::cost::{is_split, split_pays, Estimate};
use reelfarm_domain::id::now_ms;
use reelfarm_domain::job::RenderRecord;
use reelfarm_domain::output::Format;
use tokio_util::sync::CancellationToken;

use super::{Made, Prepared, RenderHandler};
use crate::failure::Failure;
use crate::render::{self, split, RenderSettings};
use crate::rotation::SEEN_EVERY;
use crate::sandbox::Piece;

impl RenderHandler {
    /// The parts of the render `p` prepares, when it is longer than the split threshold
    /// and splitting it pays (`split_pays`: its estimate, its chunks and the farm's spare
    /// slots now): its sound first (short, and needed by the join), the chunks in order,
    /// the join.
    pub(super) async fn parts_of(&self, p: &Prepared) -> Option<Vec<(PartKind, i64, i64)>> {
        let frames = split::frame_count(&p.template, p.settings.quality);
        let fps = p.template.canvas.fps.max(1);
        let duration = frames as f64 / f64::from(fps);
        if !is_split(p.settings.output.format, p.template.has_captions(), duration, self.split_after) {
            return None;
        }
        let chunks = split::chunks(frames, fps, self.split_chunk.as_secs_f64());
        let estimate = Estimate::of(&p.template, p.settings.quality, &p.settings.output, &|_| None);
        // Workers sign their rows every SEEN_EVERY: one missing two of them is gone.
        let alive_since = now_ms() - 3 * SEEN_EVERY.as_millis() as i64;
        let spare = match self.backends.store().spare_slots(alive_since).await {
            Ok(spare) => spare,
            Err(e) => {
                tracing::warn!(error = %e, "the farm's spare slots are unknown: rendering whole");
                0
            }
        };
        if !split_pays(estimate.cpu_seconds, chunks.len(), spare, self.split_gain) {
            tracing::info!(
                cpu_seconds = estimate.cpu_seconds,
                chunks = chunks.len(),
                spare,
                "rendering whole: splitting would not pay"
            );
            return None;
        }
        let end = frames as i64;
        let chunks = chunks.into_iter().map(|c| (PartKind::Frames, c.start as i64, c.end as i64));
        Some(std::iter::once((PartKind::Sound, 0, end)).chain(chunks).chain([(PartKind::Join, 0, end)]).collect())
    }

    /// Makes `part` of the split `render`: uploads a chunk or the sound, or joins them
    /// into the render's video.
    pub(super) async fn run_part(
        &self,
        render: &RenderRecord,
        part: &PartRecord,
        stop: &CancellationToken,
    ) -> Result<Made, Failure> {
        let mut p = self.prepare(render).await?;
        let frames = split::frame_count(&p.template, p.settings.quality) as i64;
        if part.end_frame > frames || part.first_frame >= part.end_frame {
            return Err(Failure::Permanent(format!("the render's part {} no longer fits its template", part.part)));
        }
        let prefix = self.output_prefix(render);
        let quality = p.settings.quality;
        let settings = RenderSettings { stop: stop.clone(), ..p.settings.clone() };
        let dir = p.dir.path().to_path_buf();
        let blobs = self.backends.blobs();
        match part.kind {
            PartKind::Frames => {
                let wanted = render::seen_sources(&p.template);
                let fetched =
                    self.fetch_sources(&p.template, wanted, &p.record, quality, &dir, Vec::new(), p.deadline).await?;
                let (mp4, jpg) = (dir.join("chunk.mp4"), dir.join("thumb.jpg"));
                let range = part.first_frame as u64..part.end_frame as u64;
                let piece = Piece::Frames { range, out: mp4.clone(), thumb: jpg.clone() };
                self.render(&p.template, fetched, settings.until(p.deadline), None, &dir, piece, p.user_id.as_str())
                    .await?;
                blobs.put_file(&part_key(&prefix, part), &mp4, "video/mp4").await?;
                if jpg.exists() {
                    blobs.put_file(&format!("{prefix}/thumb.jpg"), &jpg, "image/jpeg").await?;
                }
            }
            PartKind::Sound => {
                let speeches = self.plan_speech(&mut p.template, &p.values, &dir);
                let ready = speeches.iter().map(|s| (s.source.clone(), s.file.clone())).collect();
                let wanted = render::sources(&p.template);
                let fetched =
                    self.fetch_sources(&p.template, wanted, &p.record, quality, &dir, ready, p.deadline).await?;
                self.speak(&speeches, &p.user_id).await?;
                let file = dir.join("sound");
                let piece = Piece::Sound { out: file.clone() };
                self.render(&p.template, fetched, settings.until(p.deadline), None, &dir, piece, p.user_id.as_str())
                    .await?;
                blobs.put_file(&part_key(&prefix, part), &file, "application/octet-stream").await?;
            }
            PartKind::Join => return self.join(render, &prefix, p.template.canvas.fps.max(1), &dir).await,
        }
        Ok(Made::Part)
    }

    /// Joins the parts of `render` into its video (in `dir`) and uploads it.
    async fn join(&self, render: &RenderRecord, prefix: &str, fps: u32, dir: &Path) -> Result<Made, Failure> {
        let blobs = self.backends.blobs();
        let mut chunks = Vec::new();
        let mut sound = None;
        for part in self.backends.store().render_parts(&render.id).await? {
            let file = dir.join(format!("part-{}", part.part));
            match part.kind {
                PartKind::Frames => {
                    blobs.get_to_file(&part_key(prefix, &part), &file).await?;
                    chunks.push((file, part.first_frame as u64..part.end_frame as u64));
                }
                PartKind::Sound => {
                    blobs.get_to_file(&part_key(prefix, &part), &file).await?;
                    sound = Some(file);
                }
                PartKind::Join => {}
            }
        }
        let sound = sound.ok_or_else(|| Failure::Transient(format!("render {} has no sound part", render.id)))?;
        let mp4 = dir.join("video.mp4");
        let out = mp4.clone();
        let joined = tokio::task::spawn_blocking(move || split::join(&chunks, &sound, fps, &out))
            .await
            .map_err(|e| Failure::Transient(format!("join task: {e}")))?
            .map_err(|e| Failure::Transient(format!("joining the parts: {e}")))?;
        self.upload_video(prefix, &mp4, Format::Mp4, &joined).await
    }

    /// Removes the parts' files of the joined `render`.
    pub(super) async fn remove_parts(&self, render: &RenderRecord) {
        let parts = format!("{}/parts/", self.output_prefix(render));
        if let Err(e) = self.backends.blobs().delete_prefix(&parts).await {
            tracing::warn!(error = %e, "files of a split render's parts not removed");
        }
    }
}

/// Where the file of `part` goes, beside the render's files.
fn part_key(prefix: &str, part: &PartRecord) -> String {
    format!("{prefix}/parts/{}-{}", part.part, part.kind.as_str())
}
