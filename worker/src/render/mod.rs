//! Template rendering: one engine for the worker and for `reelfarm render`.
//!
//! [`render`] turns a validated [`Template`] (job values already applied, see
//! `reelfarm_domain::template::values`) and local copies of its sources into an MP4
//! (H.264 yuv420p + AAC 48 kHz stereo, faststart, constant frame rate, exactly
//! `round(duration × fps)` frames and as many seconds of sound) and a JPEG thumbnail —
//! or, as `RenderSettings::output` says, a WebM, a GIF, a ProRes MOV or a still
//! ([`sink`]), with the canvas's alpha where asked. Everything runs in process through
//! libav* (no ffmpeg CLI).
//!
//! How (see the submodules): the timeline is resolved first ([`plan`]); each clip's
//! layers are prepared when the clip begins — text (the cosmic-text rasteriser in
//! [`text`]), shapes and images rendered once to YUV+alpha at their box size, videos
//! opened with a decoder that seeks to `trim_start` and never decodes past what the
//! layer shows. Frames are composited in YUV 4:2:0 at output size (per-plane alpha
//! blending, transitions between two clip canvases) on the calling thread while x264
//! encodes on its own threads, fed through a bounded channel; canvases are recycled.
//! Sound is mixed sample-exact in step with the frames, or, when an earlier render of the
//! process or of the fleet ([`SoundStore`]) made the same sound, its AAC packets are
//! written again ([`sound_cache`]).
//!
//! Thumbnail: the frame at one third of the video — past most entrance animations and the
//! first transition, and the same frame on every run.
//!
//! Snapshot: [`snapshot`] draws one frame with the same compositor, without encoding video
//! or sound, and returns it in RGB as the thumbnail converts it (previews, and the golden
//! thumbnails of the example templates in `tests/golden/`).

pub mod text;

mod anim;
mod audio;
mod bilinear;
mod captions;
mod composite;
mod draw;
mod encode;
mod error;
mod geom;
mod gif;
mod image;
mod layer;
mod lottie;
mod master;
mod moving;
mod picture;
mod plan;
mod resample;
mod run;
mod sink;
mod snapshot;
mod snapshot_cache;
mod sound;
mod sound_cache;
mod source;
pub mod split;
mod subtitles;
mod video;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reelfarm_domain::output::Output;
use reelfarm_domain::template::{Source, Template};
use tokio_util::sync::CancellationToken;

use crate::media::Limits;

pub use captions::SpeechCues;
pub use error::RenderError;
pub use snapshot::snapshot;
pub use snapshot_cache::SnapshotCache;
pub use source::{seen_sources, sources};

/// Output size: the template's own, or the shorter side set to 480, 720 or 1080 pixels
/// (every position, size and font size scaled by the same factor).
pub use reelfarm_domain::quality::Quality;

/// How to render.
#[derive(Debug, Clone)]
pub struct RenderSettings {
    pub quality: Quality,
    /// The file made: an MP4 by default; WebM, GIF, MOV or a still.
    pub output: Output,
    /// x264 constant rate factor (default 23).
    pub crf: u8,
    /// x264 preset (default `veryfast`).
    pub preset: &'static str,
    /// x264 threads; 0 (default) lets x264 choose.
    pub threads: u16,
    /// Wall-clock budget; past it the render stops with [`RenderError::TimedOut`].
    pub time_limit: Duration,
    /// What every source may be (pixels of images and of video frames, duration); its
    /// `time_limit` is replaced by the one above. The worker passes its configured limits.
    pub limits: Limits,
    /// Once cancelled, the render stops before its next frame with
    /// [`RenderError::Cancelled`] (the worker cancels it when the job is).
    pub stop: CancellationToken,
    /// Where encoded sounds are shared beyond this process (none: the process keeps its
    /// own only).
    pub sounds: Option<Arc<dyn SoundStore>>,
    /// The cues of the text-to-speech values, by sound layer: what captions layers
    /// following a voice-over show.
    pub speech: SpeechCues,
    /// Render only the first seconds of the video (a template's preview); `None`: all.
    pub max_seconds: Option<f64>,
}

/// Encoded sounds shared by every process rendering (the worker's blob store): a render
/// whose sound a process of the fleet encoded before writes that sound instead of mixing
/// and encoding it. Called from the render's thread; best effort (a failure is a miss).
pub trait SoundStore: std::fmt::Debug + Send + Sync {
    /// The bytes stored under `name` (the sound's content key in hex), if any.
    fn get(&self, name: &str) -> Option<Vec<u8>>;
    /// Stores `bytes` under `name`.
    fn put(&self, name: &str, bytes: Vec<u8>);
}

impl RenderSettings {
    /// These settings with a time limit that ends at `deadline` at the latest.
    pub fn until(self, deadline: std::time::Instant) -> RenderSettings {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        RenderSettings { time_limit: self.time_limit.min(left), ..self }
    }
}

impl Default for RenderSettings {
    fn default() -> Self {
        RenderSettings {
            quality: Quality::Default,
            output: Output::default(),
            crf: 23,
            preset: "veryfast",
            threads: 0,
            time_limit: Duration::from_secs(3600),
            limits: Limits::default(),
            stop: CancellationToken::new(),
            sounds: None,
            speech: Vec::new(),
            max_seconds: None,
        }
    }
}

/// Progress of a render, reported after every frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub frames_done: u64,
    pub frames_total: u64,
}

/// What [`render`] produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RenderOutput {
    /// Output size in pixels.
    pub width: u32,
    pub height: u32,
    /// Number of video frames (a GIF's at its own rate; 0 for a still).
    pub frames: u64,
    /// Seconds (frames / fps).
    pub duration: f64,
    /// The sound was written from the packets of an earlier render of the same sound
    /// instead of being mixed and encoded.
    pub sound_kept: bool,
    /// What the sound measures, when the video has sound that is not silence.
    pub sound_level: Option<reelfarm_domain::job::SoundLevel>,
    /// The captions of the video (output timeline, by start) when it has captions layers:
    /// what its WebVTT sidecar holds.
    pub captions: Option<Vec<reelfarm_domain::captions::Cue>>,
}

/// Sizes the renderer's process-wide caches (kept sounds, each thread's glyphs) as
/// `caches` says; until then they hold the keys' defaults.
pub fn size_caches(caches: &reelfarm_backends::config::Caches) {
    sound_cache::set_limit(caches.sound_cache);
    text::set_glyph_limit(caches.glyph_cache);
}

/// Longest a preview frame ([`snapshot`]) may take.
pub(crate) fn snapshot_time_limit() -> Duration {
    snapshot::TIME_LIMIT
}

/// Forgets the sound kept from earlier renders of this process, so that the next render
/// mixes and encodes its own (for benchmarks of a first render).
pub fn forget_kept_sound() {
    sound_cache::clear();
}

/// Renders `template` into `out_mp4` and its thumbnail into `out_jpg`. `resolve` gives
/// the local file of each source (see [`sources`]); `progress` is called after every
/// frame. Blocking: run it on `spawn_blocking` or a thread. On error the partial MP4 is
/// removed.
pub fn render(
    template: &Template,
    resolve: &dyn Fn(&Source) -> Option<PathBuf>,
    settings: &RenderSettings,
    out: &Path,
    out_jpg: &Path,
    progress: &dyn Fn(Progress),
) -> Result<RenderOutput, RenderError> {
    guarded(out, || run::render(template, resolve, settings, run::Piece::Whole, out, out_jpg, progress))
}

/// Runs `work`, which writes `out`: a panic becomes an error, and on error the partial
/// `out` is removed.
fn guarded<T>(out: &Path, work: impl FnOnce() -> Result<T, RenderError>) -> Result<T, RenderError> {
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let detail = crate::media::panic_detail(&*panic);
            tracing::error!(%detail, "render panicked");
            Err(RenderError::Internal("the renderer crashed on this template".into()))
        }
    };
    if result.is_err() {
        let _ = std::fs::remove_file(out);
    }
    result
}
