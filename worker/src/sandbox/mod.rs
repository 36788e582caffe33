//! The sandbox: media work on a user's bytes runs in a child process of this binary
//! (`reelfarm sandbox`), never in the process that serves the API, the notifier or other
//! units.
//!
//! The boundary is a typed [`Plan`]: what to do (convert this file into that directory,
//! render this template from these files) and its bounds. The child reads it as one JSON line on its standard input, confines
//! itself before it reads a byte of the input ([`confine`]: address space, CPU time, no
//! sockets, no `exec`, and with Landlock only its input, its output directory and the
//! system's libraries), runs the engine alone (no store, bus or configuration) and writes
//! its [`Message`]s, JSON lines, to what was its standard output. Its memory comes from
//! the worker's budget: once the child has probed its input it asks for what the engine
//! estimates ([`Message::Reserve`]), the worker reserves it (waiting for room as
//! in-process work does) and the child lowers its address-space limit to that, for good.
//!
//! A render asks for memory more than once (a moving picture's frames as it decodes
//! them); the child keeps what it was granted until it ends, so the worker holds the
//! child's peak and the kernel's limit never has to rise again. A render's progress
//! comes as lines too, and the sounds the fleet keeps are read and written by the worker
//! on the child's behalf, as files in the render's directory (the child has no store).
//! A cancelled render's child is killed.
//!
//! A crash, an abort, running out of its memory or its time fails that one unit with an
//! error that names what it was working on and the limit it passed
//! ([`MediaError::OutOfMemory`], [`MediaError::Crashed`], [`MediaError::TimedOut`]); the
//! worker goes on. What the child answers is not trusted: the files it names must be
//! regular files in its output directory, with a content type from a fixed list.

pub mod child;
mod confine;
mod parent;

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use reelfarm_domain::output::Output;
use reelfarm_domain::template::{Source, Template};
use serde::{Deserialize, Serialize};

pub use parent::{PreviewChild, RenderServices, Sandbox};

use crate::media::{Limits, MemoryBudget, TooMuchMemory};
use crate::render::{Quality, RenderOutput, SpeechCues};

/// What a sandbox runs and within which bounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub(crate) work: Work,
    pub(crate) limits: PlanLimits,
    /// Bytes the child may map besides what it started with, before it has reserved
    /// memory for decoding (sniffing and probing).
    pub(crate) probe_memory: u64,
    /// The most a reservation can be: the worker's whole media budget (`None`: none).
    pub(crate) most_memory: Option<u64>,
    /// CPU seconds of all the child's threads together.
    pub(crate) cpu_seconds: u64,
}

/// The work of a [`Plan`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Work {
    /// An uploaded original (`input`) into its renditions, written to `out_dir`.
    Convert { input: PathBuf, out_dir: PathBuf },
    /// A template with its sources, rendered into its directory.
    Render(Box<RenderPlan>),
    /// Preview frames of one template version, drawn from the sources in `dir` one
    /// [`FrameRequest`] after another, keeping what it decoded between them (a
    /// `SnapshotCache` of `still_cache` and `video_cache` bytes); the child ends when it
    /// is asked nothing for `idle`.
    Preview { dir: PathBuf, quality: Quality, still_cache: usize, video_cache: usize, idle: Duration },
}

/// One preview frame asked of a [`Work::Preview`] child: `template` (values applied) at
/// `at` seconds, its sources' files in the child's directory; the JPEG goes to `out`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FrameRequest {
    pub(crate) template: Template,
    pub(crate) sources: Vec<(Source, PathBuf)>,
    pub(crate) at: f64,
    pub(crate) out: PathBuf,
}

/// A render in a sandbox: the template (values applied), the local file of each source
/// and what to make of it. Every file it names is in `dir`, the only directory the child
/// sees.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenderPlan {
    pub template: Template,
    pub sources: Vec<(Source, PathBuf)>,
    pub dir: PathBuf,
    pub quality: Quality,
    pub output: Output,
    pub crf: u8,
    /// One of [`PRESETS`].
    pub preset: String,
    pub threads: u16,
    pub speech: SpeechCues,
    pub max_seconds: Option<f64>,
    /// Whether the worker keeps encoded sounds for the fleet ([`Message::SoundGet`]).
    pub sounds: bool,
    pub piece: Piece,
}

/// Which part of a render a [`RenderPlan`] makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Piece {
    /// The whole video into `out`, its thumbnail into `thumb`.
    Whole { out: PathBuf, thumb: PathBuf },
    /// The frames `range`, video only, into `out`; the thumbnail into `thumb` when its
    /// frame is among them (`crate::render::split`).
    Frames { range: Range<u64>, out: PathBuf, thumb: PathBuf },
    /// The whole sound, as kept packets, into `out`.
    Sound { out: PathBuf },
}

impl Piece {
    /// The files the piece writes: the first always, the second when it made one.
    pub(crate) fn outputs(&self) -> (&PathBuf, Option<&PathBuf>) {
        match self {
            Piece::Whole { out, thumb } | Piece::Frames { out, thumb, .. } => (out, Some(thumb)),
            Piece::Sound { out } => (out, None),
        }
    }
}

/// x264's presets, the values [`RenderPlan::preset`] may take.
pub const PRESETS: [&str; 10] =
    ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"];

/// The engine's [`Limits`] without its memory budget (the worker's, asked for through
/// [`Message::Reserve`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanLimits {
    pub(crate) max_pixels: u64,
    pub(crate) max_video_pixels: u64,
    pub(crate) max_animation_pixels: u64,
    pub(crate) max_duration: Duration,
    pub(crate) time_limit: Duration,
}

impl PlanLimits {
    /// The engine's limits, with `memory` as their budget.
    pub(crate) fn with_budget(&self, memory: MemoryBudget) -> Limits {
        Limits {
            max_pixels: self.max_pixels,
            max_video_pixels: self.max_video_pixels,
            max_animation_pixels: self.max_animation_pixels,
            max_duration: self.max_duration,
            time_limit: self.time_limit,
            memory,
            ..Limits::default()
        }
    }
}

impl From<&Limits> for PlanLimits {
    fn from(l: &Limits) -> Self {
        PlanLimits {
            max_pixels: l.max_pixels,
            max_video_pixels: l.max_video_pixels,
            max_animation_pixels: l.max_animation_pixels,
            max_duration: l.max_duration,
            time_limit: l.time_limit,
        }
    }
}

/// One line the child writes to the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Message {
    /// Memory for decoding `what` ("the video"), more than the child holds: it waits for
    /// a [`Reply`].
    Reserve { what: String, bytes: u64 },
    /// A render's progress, when its percentage changed.
    Progress { frames_done: u64, frames_total: u64 },
    /// The encoded sound the fleet keeps under `name` (hex): the child waits for
    /// [`Reply::Sound`].
    SoundGet { name: String },
    /// Keep the encoded sound in the file `file` of the render's directory under `name`
    /// (no reply; the worker removes the file).
    SoundPut { name: String, file: String },
    /// The conversion finished: these files are in the output directory.
    Converted(Files),
    /// The frame asked for is in its file.
    Framed,
    /// The render finished: what it made (`None` for [`Piece::Sound`]), and how many
    /// sounds it encoded and wrote from kept packets (its metrics, for the worker's).
    Rendered { made: Option<Box<RenderOutput>>, sounds: (u64, u64) },
    /// The work failed; `retryable` when a later attempt may succeed (disk trouble).
    Failed { retryable: bool, message: String },
    /// The work ran past its time limit of `limit` seconds.
    TimedOut { limit: f64 },
}

/// The worker's answer to [`Message::Reserve`] and [`Message::SoundGet`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Reply {
    Granted,
    /// More than the worker's whole budget: it could never run here.
    TooMuch(TooMuchMemory),
    /// No room was made before the work's deadline.
    TimedOut,
    /// The kept sound asked for: the name of its file in the render's directory, if the
    /// fleet has it.
    Sound(Option<String>),
}

/// What a conversion made, as the child reports it (checked by the worker before use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Files {
    /// The asset type: `sprite`, `svg`, `video`, `audio` or `lottie`.
    pub asset_type: String,
    /// Whether the picture has transparent pixels.
    pub alpha: bool,
    /// Duration in seconds, for video and audio.
    pub duration: Option<f64>,
    /// Displayed size of the original, for pictures and video.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Every rendition, the original first and the thumbnail last.
    pub renditions: Vec<FileOut>,
}

/// One rendition of [`Files`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileOut {
    /// The file's name in the output directory; the original is the input itself.
    pub name: String,
    /// `original`, `image`, `video`, `audio` or `thumb`.
    pub role: String,
    pub content_type: String,
    pub format: String,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub codec: Option<String>,
    pub bitrate: Option<u64>,
    pub duration: Option<f64>,
}

/// Content types a conversion may give the files it makes (they are served with them).
const MADE_TYPES: &[&str] = &["image/jpeg", "image/png", "video/mp4", "video/webm", "audio/mp4", "audio/mpeg"];

/// Rendition roles a conversion reports.
const ROLES: &[&str] = &["original", "image", "video", "audio", "thumb"];

/// Asset types a conversion reports.
const ASSET_TYPES: &[&str] = &["sprite", "svg", "video", "audio", "lottie"];

#[cfg(test)]
mod tests;
