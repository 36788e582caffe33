//! Limits on what the engine accepts, and the deadline that enforces the time limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use super::budget::MemoryBudget;
use super::MediaError;

/// What the engine accepts and how long it may work on one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Largest accepted image, in pixels (width × height). Default 100 MP.
    pub max_pixels: u64,
    /// Largest accepted video frame, in pixels, as the stream declares it (checked before
    /// any frame is decoded; decoders also refuse larger frames). Default 8K (7680×4320).
    pub max_video_pixels: u64,
    /// Most pixels of all the frames of an animated GIF or WebP together (frames × width ×
    /// height: each frame is the whole picture). Default 2 billion (1,000 frames of
    /// 1080p).
    pub max_animation_pixels: u64,
    /// Longest accepted video or audio. Default 3 hours.
    pub max_duration: Duration,
    /// Wall-clock budget of one probe or conversion; past it the work stops with
    /// [`MediaError::TimedOut`]. Default 2 hours.
    pub time_limit: Duration,
    /// Memory the media work of the whole process may hold at once, shared by every
    /// clone (see [`MemoryBudget`]). Default unlimited.
    pub memory: MemoryBudget,
    /// What a template may ask of a render (length, layers, boxes, estimated memory):
    /// checked again before every render and snapshot, for templates saved before the
    /// limits were lowered.
    pub template: reelfarm_domain::cost::Limits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pixels: 100_000_000,
            max_video_pixels: 7680 * 4320,
            max_animation_pixels: 2_000_000_000,
            max_duration: Duration::from_secs(3 * 3600),
            time_limit: Duration::from_secs(2 * 3600),
            memory: MemoryBudget::default(),
            template: reelfarm_domain::cost::Limits::default(),
        }
    }
}

impl Limits {
    /// The limits an operator configured (`REELFARM_MAX_IMAGE_PIXELS`,
    /// `REELFARM_MAX_VIDEO_PIXELS`, `REELFARM_MAX_MEDIA_DURATION`, `REELFARM_JOB_TIMEOUT`),
    /// with a new memory budget of `REELFARM_MEDIA_MEMORY`: call it once per process and
    /// clone the result, so that every job shares the budget.
    pub fn from_config(config: &reelfarm_backends::Config) -> Limits {
        Limits {
            max_pixels: config.worker.max_image_pixels,
            max_video_pixels: config.worker.max_video_pixels,
            max_animation_pixels: config.worker.max_animation_pixels,
            max_duration: config.worker.max_media_duration,
            time_limit: config.worker.job_timeout,
            memory: MemoryBudget::new(config.worker.media_memory),
            template: config.render,
        }
    }

    /// Refuses a picture of `width` × `height` above [`Limits::max_pixels`].
    pub(crate) fn check_pixels(&self, width: u32, height: u32) -> Result<(), MediaError> {
        let pixels = u64::from(width) * u64::from(height);
        if pixels > self.max_pixels {
            return Err(MediaError::TooLarge { pixels, limit: self.max_pixels });
        }
        Ok(())
    }

    /// Refuses a video whose frames, `width` × `height`, are above
    /// [`Limits::max_video_pixels`].
    pub(crate) fn check_video_pixels(&self, width: u32, height: u32) -> Result<(), MediaError> {
        if u64::from(width) * u64::from(height) > self.max_video_pixels {
            return Err(MediaError::FrameTooLarge { width, height, limit: self.max_video_pixels });
        }
        Ok(())
    }

    /// Refuses media longer than [`Limits::max_duration`].
    pub(crate) fn check_duration(&self, seconds: f64) -> Result<(), MediaError> {
        let limit = self.max_duration.as_secs_f64();
        if seconds > limit {
            return Err(MediaError::TooLong { seconds, limit });
        }
        Ok(())
    }
}

/// The instant a probe or conversion must be done by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    end: Instant,
    limit: Duration,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub(crate) fn after(limit: Duration) -> Self {
        let now = Instant::now();
        Deadline { end: now.checked_add(limit).unwrap_or(now + Duration::from_secs(86_400 * 365)), limit }
    }

    /// Whether the deadline has passed.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.end
    }

    /// The time left; `None` once the deadline has passed.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
    }

    /// `Err(TimedOut)` once the deadline has passed; called in every decode loop.
    pub(crate) fn check(&self) -> Result<(), MediaError> {
        if self.expired() {
            return Err(self.error());
        }
        Ok(())
    }

    /// The error reported when the deadline passed.
    pub(crate) fn error(&self) -> MediaError {
        MediaError::TimedOut { limit: self.limit.as_secs_f64() }
    }
}

/// The deadline an opened input's libav interrupt callback checks (blocking demuxer calls
/// give up once it passes). It moves with the work: an input kept between calls (a
/// preview's video reader) answers to the deadline of the call it serves, not of the
/// call that opened it, which had long passed.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt(Arc<AtomicU64>);

impl Interrupt {
    /// The interrupt of an input opened for a call with `deadline`.
    pub(crate) fn new(deadline: &Deadline) -> Self {
        Interrupt(Arc::new(AtomicU64::new(nanos(deadline.end))))
    }

    /// From now on the callback answers to `deadline`.
    pub(crate) fn set(&self, deadline: &Deadline) {
        self.0.store(nanos(deadline.end), Ordering::Relaxed);
    }

    /// The callback libav calls: `true` once the deadline has passed.
    pub(crate) fn callback(&self) -> impl FnMut() -> bool + Send + 'static {
        let end = self.0.clone();
        move || nanos(Instant::now()) >= end.load(Ordering::Relaxed)
    }
}

/// Nanoseconds from the first call in this process to `at` (an `Instant` as a number).
fn nanos(at: Instant) -> u64 {
    static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(at.saturating_duration_since(*ORIGIN).as_nanos()).unwrap_or(u64::MAX)
}
