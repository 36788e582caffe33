//! The conversion engine: probes an uploaded file and produces its renditions.
//!
//! Everything here is blocking; callers run it on `spawn_blocking` or a worker thread.
//! Each call enforces [`Limits::time_limit`] itself and never panics on bad input (a
//! panic boundary turns an engine bug into [`MediaError::Internal`]).
//!
//! * images (JPEG, PNG, GIF, WebP, HEIC/AVIF via libheif): the original, long-side
//!   renditions of 1920/1280/640/320 px that are not larger than the source (or one at the
//!   source size when it is smaller than all of them), a thumbnail of at most 320 px,
//!   EXIF orientation applied, `alpha` from the pixels. JPEG renditions, PNG when alpha.
//! * SVG: the vector original and PNG/JPEG renditions at every rung (vector has no native
//!   resolution), rendered with resvg; external references are never loaded.
//! * video: one demux and decode feeding H.264/AAC MP4 renditions of 1080p/720p/480p
//!   (shorter side, never above the source), a VP9+Opus WebM (`yuva420p`) at the largest
//!   rung when the source really has transparent pixels, a poster thumbnail and duration.
//! * audio: one decode feeding AAC (`.m4a`) and MP3 renditions, an 800×200 waveform PNG
//!   and duration.
//! * Lottie (JSON, or a dotLottie archive): checked and parsed by rlottie, kept as it is,
//!   a thumbnail of its middle frame, size and duration.
//!
//! The kind comes from the bytes, never the file name. libav only ever opens the input
//! itself: `protocol_whitelist=file`, a demuxer allow-list (`av::ALLOWED_DEMUXERS`) and
//! an interrupt callback on the deadline, so a "video" that is really an HLS or concat
//! playlist is refused before it can fetch a URL or read another file.
//!
//! Known limits: animated GIF/WebP keep their animation only in the original (renditions
//! are the first frame; the duration says it is animated, and templates play the
//! original); interlaced video is encoded as is (no deinterlacer); the MP4s of a
//! source with transparency drop the alpha channel (the WebM keeps it).
//!
//! For benchmarks, [`convert`] is the entry point; `tests/bench.rs` holds the ignored
//! comparisons against the ffmpeg CLI.

pub(crate) mod animated;
pub(crate) mod audio;
pub(crate) mod audio_enc;
pub(crate) mod av;
mod avprobe;
pub(crate) mod budget;
pub(crate) mod decoders;
mod error;
pub(crate) mod heif;
pub(crate) mod limits;
pub(crate) mod lottie;
pub(crate) mod mux;
pub mod passthrough;
mod poster;
pub(crate) mod raster;
pub(crate) mod sniff;
pub(crate) mod still;
pub(crate) mod svg;
mod video;
mod video_enc;
mod waveform;

#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};

pub use budget::{MemoryBudget, TooMuchMemory};
pub use error::MediaError;
pub use limits::Limits;

use limits::Deadline;
use sniff::Sniffed;

/// What kind of asset a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// A raster image (the asset type `sprite`).
    Image,
    /// A vector image (the asset type `svg`).
    Svg,
    /// A video, with or without sound.
    Video,
    /// Sound only.
    Audio,
    /// A Lottie animation (JSON or dotLottie).
    Lottie,
}

impl MediaKind {
    /// The asset type the API reports: `sprite`, `svg`, `video`, `audio` or `lottie`.
    pub fn asset_type(self) -> &'static str {
        match self {
            MediaKind::Image => "sprite",
            MediaKind::Svg => "svg",
            MediaKind::Video => "video",
            MediaKind::Audio => "audio",
            MediaKind::Lottie => "lottie",
        }
    }
}

/// What [`probe`] learnt about a file without converting it.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The kind of asset.
    pub kind: MediaKind,
    /// Short format name: `jpeg`, `png`, `gif`, `webp`, `heif`, `svg`, `mp4`, `mov`,
    /// `webm`, `mkv`, `mp3`, `m4a`, `wav`, …
    pub format: String,
    /// MIME type of the file.
    pub content_type: &'static str,
    /// Displayed width in pixels (rotation and pixel aspect applied); `None` for audio.
    pub width: Option<u32>,
    /// Displayed height in pixels; `None` for audio.
    pub height: Option<u32>,
    /// Duration in seconds of video and audio.
    pub duration: Option<f64>,
    /// Whether the format carries an alpha channel (images: the colour type; video: the
    /// pixel format or WebM `alpha_mode`). [`Converted::alpha`] checks actual pixels.
    pub has_alpha: bool,
    /// Whether there is a sound track.
    pub has_audio: bool,
    /// Codec of the picture stream (`h264`, `vp9`, …), for video.
    pub video_codec: Option<String>,
    /// Codec of the sound stream (`aac`, `mp3`, …).
    pub audio_codec: Option<String>,
    /// Average frame rate of video.
    pub frame_rate: Option<f64>,
    /// Overall bit rate in bits per second, when known.
    pub bitrate: Option<u64>,
}

/// What a rendition is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The uploaded file itself (the input path; not copied).
    Original,
    /// A still scaled so its longer side is `long_side` pixels.
    Image {
        /// Length of the longer side in pixels.
        long_side: u32,
    },
    /// An H.264/AAC MP4 whose shorter side is `short_side` pixels (`1080` = "1080p").
    Video {
        /// Length of the shorter side in pixels.
        short_side: u32,
    },
    /// A VP9 WebM keeping the alpha channel, for sources with transparency.
    VideoAlpha {
        /// Length of the shorter side in pixels.
        short_side: u32,
    },
    /// A sound-only rendition.
    Audio {
        /// `aac` or `mp3`.
        codec: &'static str,
    },
    /// The thumbnail (image, video poster or audio waveform).
    Thumb,
}

/// One file produced (or, for [`Role::Original`], kept) by a conversion.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendition {
    /// Where the file is.
    pub file: PathBuf,
    /// What it is for.
    pub role: Role,
    /// MIME type.
    pub content_type: &'static str,
    /// Short format name: `jpeg`, `png`, `svg`, `mp4`, `webm`, `m4a`, `mp3`, …
    pub format: String,
    /// Displayed width in pixels, for pictures and video.
    pub width: Option<u32>,
    /// Displayed height in pixels, for pictures and video.
    pub height: Option<u32>,
    /// Main codec (`h264`, `vp9`, `aac`, `mp3`), for video and audio.
    pub codec: Option<String>,
    /// Target bit rate in bits per second, for audio.
    pub bitrate: Option<u64>,
    /// Duration in seconds, for video and audio.
    pub duration: Option<f64>,
    /// Size of the file in bytes.
    pub size: u64,
}

/// The result of [`convert`].
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The kind of asset.
    pub kind: MediaKind,
    /// Short format name of the original (as in [`Probe::format`]).
    pub format: String,
    /// Every rendition, the original first and the thumbnail last.
    pub renditions: Vec<Rendition>,
    /// The thumbnail file (also listed in `renditions` with [`Role::Thumb`]).
    pub thumb: PathBuf,
    /// Whether the picture has transparent pixels.
    pub alpha: bool,
    /// Duration in seconds, for video and audio.
    pub duration: Option<f64>,
    /// Displayed width of the original in pixels (none for audio).
    pub width: Option<u32>,
    /// Displayed height of the original in pixels (none for audio).
    pub height: Option<u32>,
}

/// Probes `path`: kind, format, size, duration, alpha. Refuses what [`convert`] would
/// refuse for its size or duration.
pub fn probe(path: &Path, limits: &Limits) -> Result<Probe, MediaError> {
    probe_opening(path, limits).map(|(probe, _)| probe)
}

/// A video input [`probe_opening`] left open, at its start, and the interrupt its reads
/// answer to.
pub(crate) struct Opened {
    pub(crate) input: ffmpeg_next::format::context::Input,
    pub(crate) interrupt: limits::Interrupt,
}

/// [`probe`], and for a video the input the probe opened: a reader of the video goes on
/// with it instead of opening and probing the file again (`avformat_find_stream_info`
/// decodes the first frames).
pub(crate) fn probe_opening(path: &Path, limits: &Limits) -> Result<(Probe, Option<Opened>), MediaError> {
    let deadline = Deadline::after(limits.time_limit);
    guarded(|| match sniff::sniff(path)? {
        Sniffed::Svg => svg::probe(path).map(|p| (p, None)),
        Sniffed::Lottie => lottie::probe(path).map(|p| (p, None)),
        Sniffed::Heif => heif::probe(path, limits).map(|p| (p, None)),
        Sniffed::Other => {
            let interrupt = limits::Interrupt::new(&deadline);
            let probed = avprobe::probe_interrupted(path, limits, &deadline, &interrupt)?;
            let opened = (probed.probe.kind == MediaKind::Video).then(|| Opened { input: probed.input, interrupt });
            Ok((probed.probe, opened))
        }
        still_format => raster::probe(path, still_format, limits).map(|p| (p, None)),
    })
}

/// Converts `input` into renditions written to `out_dir` (which must exist; use a fresh
/// directory per conversion: file names are fixed, e.g. `1280.jpg`, `720p.mp4`). Reports
/// progress from 0.0 to 1.0 through `progress`. On error, files already written to
/// `out_dir` are left for the caller to remove with the directory.
pub fn convert(input: &Path, out_dir: &Path, limits: &Limits, progress: &dyn Fn(f32)) -> Result<Converted, MediaError> {
    let deadline = Deadline::after(limits.time_limit);
    let job = Job { input, out_dir, limits, deadline: &deadline, progress };
    // Each branch reserves its memory estimate (see `budget::estimate`) after probing and
    // before decoding; the reservation is released when the branch ends, panic included.
    let converted = guarded(|| match sniff::sniff(input)? {
        Sniffed::Svg => {
            let _memory = limits.memory.reserve_for("the SVG picture", budget::estimate::svg(), &deadline)?;
            svg::convert(&job)
        }
        Sniffed::Lottie => {
            let size = std::fs::metadata(input)?.len();
            let _memory =
                limits.memory.reserve_for("the Lottie animation", budget::estimate::lottie(size), &deadline)?;
            lottie::convert(&job)
        }
        Sniffed::Other => {
            let probed = avprobe::probe(input, limits, &deadline)?;
            match probed.probe.kind {
                // Sound holds a few thousand samples at a time: nothing worth reserving.
                MediaKind::Audio => audio::convert(&job, probed),
                _ => {
                    let p = &probed.probe;
                    let (w, h) = (p.width.unwrap_or(0), p.height.unwrap_or(0));
                    let estimate = budget::estimate::video_here(w, h, p.has_alpha);
                    let _memory = limits.memory.reserve_for("the video", estimate, &deadline)?;
                    video::convert(&job, probed)
                }
            }
        }
        still_format => {
            let probed = raster::probe(input, still_format, limits)?;
            let (w, h) = (probed.width.unwrap_or(0), probed.height.unwrap_or(0));
            let _memory = limits.memory.reserve_for("the image", budget::estimate::image(w, h), &deadline)?;
            raster::convert(&job, still_format)
        }
    })?;
    progress(1.0);
    Ok(converted)
}

/// The arguments of one conversion, passed down to the pipelines.
pub(crate) struct Job<'a> {
    pub(crate) input: &'a Path,
    pub(crate) out_dir: &'a Path,
    pub(crate) limits: &'a Limits,
    pub(crate) deadline: &'a Deadline,
    pub(crate) progress: &'a dyn Fn(f32),
}

impl Job<'_> {
    /// The original as a rendition.
    pub(crate) fn original(&self, content_type: &'static str, format: &str) -> Result<Rendition, MediaError> {
        Ok(Rendition {
            file: self.input.to_path_buf(),
            role: Role::Original,
            content_type,
            format: format.to_owned(),
            width: None,
            height: None,
            codec: None,
            bitrate: None,
            duration: None,
            size: std::fs::metadata(self.input)?.len(),
        })
    }
}

/// The message a panic carried, for the log.
/// An empty vector with room for `len` items, or an error naming `what` when the memory
/// cannot be had: large buffers are made this way, so that work that cannot get its memory
/// fails alone instead of aborting the process.
pub(crate) fn buffer<T>(len: usize, what: &str) -> Result<Vec<T>, MediaError> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(len).map_err(|_| MediaError::Internal(format!("not enough memory for {what}")))?;
    Ok(buffer)
}

pub(crate) fn panic_detail(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic")
}

/// The panic boundary: a panic inside the engine (a bug, or a library asserting on input
/// we failed to vet) becomes an error instead of taking the worker down.
fn guarded<T>(work: impl FnOnce() -> Result<T, MediaError>) -> Result<T, MediaError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let detail = panic_detail(&*panic);
            tracing::error!(%detail, "media conversion panicked");
            Err(MediaError::Internal("the converter crashed on this file".into()))
        }
    }
}
