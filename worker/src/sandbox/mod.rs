//! The sandbox: media work on a user's bytes runs in a child process of this binary
//! (`reelfarm sandbox`), never in the process that serves the API, the notifier or other
//! units.
//!
//! The boundary is a typed [`Plan`]: what to do (convert this file into that directory)
//! and its bounds. The child reads it as one JSON line on its standard input, confines
//! itself before it reads a byte of the input ([`confine`]: address space, CPU time, no
//! sockets, no `exec`, and with Landlock only its input, its output directory and the
//! system's libraries), runs the engine alone (no store, bus or configuration) and writes
//! its [`Message`]s, JSON lines, to what was its standard output. Its memory comes from
//! the worker's budget: once the child has probed its input it asks for what the engine
//! estimates ([`Message::Reserve`]), the worker reserves it (waiting for room as
//! in-process work does) and the child lowers its address-space limit to that, for good.
//!
//! A crash, an abort, running out of its memory or its time fails that one unit with an
//! error that names what it was working on and the limit it passed
//! ([`MediaError::OutOfMemory`], [`MediaError::Crashed`], [`MediaError::TimedOut`]); the
//! worker goes on. What the child answers is not trusted: the files it names must be
//! regular files in its output directory, with a content type from a fixed list.

pub mod child;
mod confine;
mod parent;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use parent::Sandbox;

use crate::media::{Limits, MemoryBudget, TooMuchMemory};

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
}

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
    /// Memory for decoding `what` ("the video"): the child waits for a [`Grant`].
    Reserve { what: String, bytes: u64 },
    /// The work finished: these files are in the output directory.
    Converted(Files),
    /// The work failed; `retryable` when a later attempt may succeed (disk trouble).
    Failed { retryable: bool, message: String },
}

/// The worker's answer to [`Message::Reserve`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Grant {
    Granted,
    /// More than the worker's whole budget: it could never run here.
    TooMuch(TooMuchMemory),
    /// No room was made before the work's deadline.
    TimedOut,
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
