//! `[worker]` and `[render]`: how much work a worker takes on, and what one render may ask.

use std::time::Duration;

use reelfarm_domain::cost::Limits;

use super::keys::key;
use super::sources::{
    at_least_one, default_media_memory, duration_from, optional, parse, parse_bytes, parse_duration, parse_int,
    parse_or, size_limit, Raw,
};
use super::ConfigError;

#[derive(Debug, Clone)]
pub struct Worker {
    /// Jobs one worker runs at once; also its bus prefetch.
    pub worker_slots: u16,
    /// x264 threads of each render; 0 lets x264 choose.
    pub encoder_threads: u16,
    /// Longest a conversion or a render may run.
    pub job_timeout: Duration,
    /// Renders longer than this are split into chunks (zero: never).
    pub split_after: Duration,
    /// Length of a split render's chunks (at least one frame).
    pub split_chunk: Duration,
    /// How many times sooner a split render must be expected to finish (0: always split).
    pub split_gain: f64,
    /// Bytes the media work of one worker process may hold at once, as estimated before
    /// decoding (a job estimated above it fails, others wait for room); `None`: no budget.
    /// Default: half the cgroup memory limit, else half the RAM.
    pub media_memory: Option<u64>,
    /// Largest image a conversion or render accepts, in pixels.
    pub max_image_pixels: u64,
    /// Largest video frame a conversion or render accepts, in pixels (checked on what the
    /// stream declares, before any frame is decoded).
    pub max_video_pixels: u64,
    /// Most pixels of all frames of an animated picture together.
    pub max_animation_pixels: u64,
    /// Longest video or audio a conversion accepts.
    pub max_media_duration: Duration,
    /// The program sandboxed media work runs in (`None`: this binary).
    pub sandbox_program: Option<std::path::PathBuf>,
}

impl Worker {
    pub(super) fn read(raw: &Raw) -> Result<Worker, ConfigError> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
        Ok(Worker {
            worker_slots: parse_or(raw, key::worker_slots, &cores, at_least_one::<u16>)?,
            encoder_threads: parse(raw, key::encoder_threads, parse_int::<u16>)?,
            job_timeout: parse(raw, key::job_timeout, parse_duration)?,
            split_after: parse(raw, key::split_after, parse_duration)?,
            split_chunk: parse(raw, key::split_chunk, duration_from(Duration::from_secs(1), "at least 1s"))?,
            split_gain: parse(raw, key::split_gain, |s| match s.parse::<f64>() {
                Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
                _ => Err("expected a number from 0 to 100".to_string()),
            })?,
            media_memory: parse_or(raw, key::media_memory, &default_media_memory().to_string(), size_limit)?,
            max_image_pixels: parse(raw, key::max_image_pixels, at_least_one::<u64>)?,
            max_video_pixels: parse(raw, key::max_video_pixels, at_least_one::<u64>)?,
            max_animation_pixels: parse(raw, key::max_animation_pixels, at_least_one::<u64>)?,
            max_media_duration: parse(raw, key::max_media_duration, parse_duration)?,
            sandbox_program: optional(raw, key::sandbox_program, |s| Ok(std::path::PathBuf::from(s)))?,
        })
    }
}

/// Reads `[render]`: what one render may ask, never more memory than the worker's budget.
pub(super) fn render_limits(raw: &Raw, worker: &Worker) -> Result<Limits, ConfigError> {
    Ok(Limits {
        max_duration: parse(raw, key::max_video_duration, duration_from(Duration::from_secs(1), "at least 1s"))?
            .as_secs_f64(),
        max_layers: parse(raw, key::max_layers, at_least_one::<usize>)?,
        max_layer_scale: parse(raw, key::max_layer_scale, |s| match s.parse::<f64>() {
            Ok(x) if (1.0..=16.0).contains(&x) => Ok(x),
            _ => Err("expected a number from 1 to 16".to_string()),
        })?,
        max_render_memory: parse(raw, key::max_render_memory, |s| match parse_bytes(s)? {
            n if n < 64 << 20 => Err("must be at least 64MiB".to_string()),
            n => Ok(n.min(worker.media_memory.unwrap_or(u64::MAX))),
        })?,
    })
}
