//! What a unit of work costs before it runs, and the limits work is admitted under.
//!
//! [`Estimate::of`] reads a template as a worker will render it — output frames and pixels,
//! every layer's box and kind, the sources it decodes — and gives the CPU-seconds and peak
//! memory of the render. The scheduler weighs accounts by it, credits follow it
//! ([`credits`]), and [`Limits::check`] refuses a template whose render would break a
//! deployment's limits when it is saved, imported or rendered. The constants are fitted to
//! `reelfarm bench estimate`, which prints the estimate beside the measured render of every
//! example template.

use std::time::Duration;

use crate::output::{Format, Output};
use crate::quality::Quality;
use crate::template::{Animation, Content, Source, Template, ValidationError};

/// Largest box side the renderer draws, in output pixels (larger boxes are clipped).
pub const MAX_BOX_SIDE: u32 = 16_384;

/// Frames the encoder holds (x264's lookahead and references).
const ENCODER_FRAMES: u64 = 32;
/// Canvases the compositor holds besides the encoder's: the canvas being drawn, the
/// transition scratch canvases and the thumbnail.
const RENDER_CANVASES: u64 = 8;
/// Reference frames a video decoder holds, and its frame threads (at most 8 in a render).
const DECODER_FRAMES: u64 = 16 + 8;
/// Bytes of a YUV 4:2:0 pixel.
const YUV420: f64 = 1.5;
/// Memory of the process around a render (code, fonts, libav's tables, allocator slack):
/// what `reelfarm bench estimate` measures beyond the buffers counted here.
const BASE_MEMORY: u64 = 128 << 20;

/// Nanoseconds of CPU per output pixel and frame: encoding (H.264, `veryfast`) and the
/// canvas's colour conversion.
const ENCODE_NS: f64 = 9.0;
/// Per visible layer pixel and frame: blending a prepared picture onto the canvas.
const BLEND_NS: f64 = 1.2;
/// Per source pixel and frame: decoding a video source and scaling it into its box.
const DECODE_NS: f64 = 4.0;
/// Per box pixel and frame: rlottie drawing a frame, converted to the canvas.
const LOTTIE_NS: f64 = 12.0;
/// Per box pixel and frame: resampling a picture's Ken Burns window into its box.
const KEN_BURNS_NS: f64 = 8.0;
/// Per box pixel, once: rasterising text, shapes and fitted pictures.
const PREPARE_NS: f64 = 20.0;
/// Per output sample: mixing and encoding the sound (48 kHz stereo AAC).
const SOUND_NS: f64 = 150.0;
/// Per output sample and pass: mixing the sound once more to measure its loudness…
const MEASURE_NS: f64 = 60.0;
/// …which a loudness target takes once, and again while the limiter's loss is made up
/// (up to three times; once is typical).
const MEASURE_PASSES: f64 = 2.0;
/// Seconds of every render: opening the output, probing sources, writing the thumbnail.
const FIXED_SECONDS: f64 = 0.05;

/// A render's deadline is its estimated CPU-seconds times this…
pub const DEADLINE_FACTOR: f64 = 20.0;
/// …and never less than this.
pub const DEADLINE_FLOOR: Duration = Duration::from_secs(120);

/// What one render of a template costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Output frames (1 for a still).
    pub frames: u64,
    /// Output size.
    pub width: u32,
    pub height: u32,
    /// Seconds of video.
    pub duration: f64,
    /// CPU-seconds of the render on one core.
    pub cpu_seconds: f64,
    /// Peak bytes the render holds.
    pub peak_memory: u64,
}

impl Estimate {
    /// The render of `template` at `quality` into `output`; `source_size` gives the
    /// declared frame size of a video source where it is known (library assets' probes),
    /// otherwise its box at the output size is counted.
    pub fn of(
        template: &Template,
        quality: Quality,
        output: &Output,
        source_size: &dyn Fn(&Source) -> Option<(u32, u32)>,
    ) -> Estimate {
        let format = output.format;
        let canvas = &template.canvas;
        let (width, height) = quality.output_size(canvas.width, canvas.height);
        let (sx, sy) =
            (f64::from(width) / f64::from(canvas.width.max(1)), f64::from(height) / f64::from(canvas.height.max(1)));
        let fps = f64::from(canvas.fps.max(1));
        let duration = template.duration().max(0.0);
        let frames = if format.is_still() { 1 } else { (duration * fps).round().max(1.0) as u64 };
        // A still draws one frame of the timeline.
        let shown = frames as f64 / (duration * fps).max(1.0);
        let out_px = f64::from(width) * f64::from(height);
        let mut cpu = FIXED_SECONDS + frames as f64 * out_px * ENCODE_NS * 1e-9;
        if format.has_sound() {
            let measuring = if output.loudness.or(template.loudness).is_some() { MEASURE_PASSES } else { 0.0 };
            cpu += duration * 48_000.0 * (SOUND_NS + measuring * MEASURE_NS) * 1e-9;
        }
        let mut memory = BASE_MEMORY + yuv(out_px, ENCODER_FRAMES + RENDER_CANVASES);
        for clip in &template.clips {
            for layer in &clip.layers {
                let Some(frame) = layer.content.frame() else { continue };
                let side = |v: f64, s: f64| (v * s).abs().min(f64::from(MAX_BOX_SIDE)).max(1.0);
                let box_px = side(frame.width, sx) * side(frame.height, sy);
                // The part of the box on the canvas is what is blended.
                let seen = (frame.width * sx).min(f64::from(width)).max(1.0)
                    * (frame.height * sy).min(f64::from(height)).max(1.0);
                let layer_frames = (layer.duration_in(clip.duration).max(0.0) * fps * shown).ceil();
                let per_frame_ns = match &layer.content {
                    Content::Video(video) => {
                        let src = source_size(&video.source).map_or(box_px, |(w, h)| f64::from(w) * f64::from(h));
                        memory += yuv(src, DECODER_FRAMES) + (box_px * 4.0) as u64;
                        src * DECODE_NS + seen * BLEND_NS
                    }
                    Content::Lottie(_) => {
                        memory += (box_px * 8.0) as u64;
                        box_px * LOTTIE_NS + seen * BLEND_NS
                    }
                    _ => {
                        // A picture made once, and the scratch it is moved or turned in.
                        memory += (box_px * 8.0) as u64;
                        cpu += box_px * PREPARE_NS * 1e-9;
                        let panned = layer.animations.iter().any(|a| matches!(a, Animation::KenBurns { .. }));
                        seen * BLEND_NS + if panned { box_px * KEN_BURNS_NS } else { 0.0 }
                    }
                };
                cpu += layer_frames * per_frame_ns * 1e-9;
            }
        }
        Estimate { frames, width, height, duration, cpu_seconds: cpu, peak_memory: memory }
    }

    /// Making the thumb and preview of a saved `template`: its first
    /// [`TEMPLATE_PREVIEW_SECONDS`](crate::preview::TEMPLATE_PREVIEW_SECONDS) at preview
    /// quality, however long the template.
    pub fn template_media(template: &Template) -> Estimate {
        let quality = Quality::of_preview(template.canvas.width, template.canvas.height);
        Estimate::of(template, quality, &Output::default(), &|_| None).first(crate::preview::TEMPLATE_PREVIEW_SECONDS)
    }

    /// The render of only the first `seconds` of the video (all of it when shorter).
    pub fn first(self, seconds: f64) -> Estimate {
        let shown = (seconds / self.duration.max(1e-3)).clamp(0.0, 1.0);
        Estimate {
            frames: ((self.frames as f64 * shown).round() as u64).max(1),
            duration: self.duration * shown,
            cpu_seconds: self.cpu_seconds * shown,
            ..self
        }
    }

    /// The credits a render of this estimate takes ([`credits`]).
    pub fn credits(&self) -> i64 {
        credits(self.duration, self.width, self.height)
    }

    /// How long the render may run: [`DEADLINE_FACTOR`] times its CPU-seconds (renders
    /// share cores, wait for memory, and estimates err), at least [`DEADLINE_FLOOR`],
    /// at most `cap` (`REELFARM_JOB_TIMEOUT`).
    pub fn time_limit(&self, cap: Duration) -> Duration {
        let limit = Duration::try_from_secs_f64(self.cpu_seconds * DEADLINE_FACTOR).unwrap_or(cap);
        limit.max(DEADLINE_FLOOR).min(cap)
    }

    /// CPU-milliseconds, at least 1: what the scheduler's shares count.
    pub fn cpu_ms(&self) -> i64 {
        ((self.cpu_seconds * 1000.0).ceil() as i64).max(1)
    }
}

/// The largest box, in output pixels at `quality`, that a layer of `template` showing
/// `source` fills: what the file decoded for it needs to cover.
pub fn source_box(template: &Template, source: &Source, quality: Quality) -> (u32, u32) {
    let canvas = &template.canvas;
    let scale = quality.short_side().map_or(1.0, |side| f64::from(side) / f64::from(canvas.width.min(canvas.height)));
    let (mut width, mut height) = (0.0f64, 0.0f64);
    for layer in template.clips.iter().flat_map(|c| &c.layers) {
        if layer.content.source() == Some(source) {
            if let Some(frame) = layer.content.frame() {
                width = width.max(frame.width * scale);
                height = height.max(frame.height * scale);
            }
        }
    }
    (width.ceil() as u32, height.ceil() as u32)
}

/// Estimated CPU-milliseconds above which a render that one worker renders whole is a
/// long unit of work: a worker with more than one slot keeps one of them for shorter
/// work, so that one account's long GIFs cannot hold a farm for hours.
pub const LONG_UNIT_MS: i64 = 120_000;

/// Whether workers that split renders longer than `split_after` (zero: never) render a
/// video of `duration` seconds into `format` as chunks on many workers: only MP4s are
/// joined from chunks, and not those with captions (their cues come from the speech,
/// which only the sound part makes).
pub fn is_split(format: Format, captions: bool, duration: f64, split_after: Duration) -> bool {
    !split_after.is_zero() && format == Format::Mp4 && !captions && duration > split_after.as_secs_f64()
}

/// Seconds of work each chunk of a split render adds on a worker: its claim, the sources
/// fetched again, a fresh encoder, its upload and its copy into the join. `reelfarm bench
/// split`'s cheap 150 s video in 15 chunks on two slots ended 3.6 s after half its whole
/// render's time (docs/performance.md): about 0.5 s a chunk.
pub const CHUNK_OVERHEAD_SECONDS: f64 = 0.5;
/// Seconds a split render takes beyond its chunks: its sound before and its join after.
pub const JOIN_SECONDS: f64 = 1.0;

/// Whether a render that [`is_split`] allows is worth splitting: estimated at
/// `cpu_seconds` on one worker, its `chunks` on the claiming worker's slot and the farm's
/// `spare_slots` (at most one chunk each at a time) must finish `gain` times sooner, their
/// overhead counted. A farm without a spare slot renders it whole; a `gain` of 0 splits it
/// anyway.
pub fn split_pays(cpu_seconds: f64, chunks: usize, spare_slots: i64, gain: f64) -> bool {
    if gain <= 0.0 {
        return true;
    }
    let slots = (spare_slots.max(0) + 1).min(chunks as i64);
    if slots < 2 {
        return false;
    }
    let split = (cpu_seconds + chunks as f64 * CHUNK_OVERHEAD_SECONDS) / slots as f64 + JOIN_SECONDS;
    cpu_seconds >= gain * split
}

/// Memory an open video decoder of `width`×`height` frames holds: its reference frames and
/// frame threads' pictures.
pub fn decoder_bytes(width: u32, height: u32) -> u64 {
    yuv(f64::from(width) * f64::from(height), DECODER_FRAMES)
}

fn yuv(pixels: f64, frames: u64) -> u64 {
    (pixels * YUV420) as u64 * frames
}

/// Output pixels one credit covers per minute: 1080p (1920 × 1080).
pub const CREDIT_PIXELS: u64 = 1920 * 1080;
/// Seconds of video one credit covers at up to [`CREDIT_PIXELS`].
pub const CREDIT_SECONDS: f64 = 60.0;

/// The credits of a render: one per started minute of output, times one per started
/// 1080p's worth of pixels per frame. A video of up to a minute at up to 1080p (either
/// orientation) takes 1 credit; two minutes at 4K take 8.
pub fn credits(duration: f64, width: u32, height: u32) -> i64 {
    let minutes = (duration / CREDIT_SECONDS).ceil().max(1.0);
    let sizes = (u64::from(width) * u64::from(height)).div_ceil(CREDIT_PIXELS).max(1);
    (minutes as i64).saturating_mul(sizes as i64)
}

/// What a deployment admits: refused when a template is saved or imported, and again
/// before a render (configuration keys `max_video_duration`, `max_layers`,
/// `max_layer_scale`, `max_render_memory`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Longest video, in seconds.
    pub max_duration: f64,
    /// Most layers in a template, all clips together.
    pub max_layers: usize,
    /// Largest layer box side, as a multiple of the canvas's side along it.
    pub max_layer_scale: f64,
    /// Most estimated peak memory of one render, in bytes.
    pub max_render_memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_duration: 3600.0, max_layers: 200, max_layer_scale: 4.0, max_render_memory: 2 << 30 }
    }
}

impl Limits {
    /// Every limit `template` breaks, each at its JSON path; the memory of its largest
    /// render (`quality`, the template's own size when `Default`) is estimated with
    /// `source_size` as [`Estimate::of`] takes it.
    pub fn check(
        &self,
        template: &Template,
        quality: Quality,
        source_size: &dyn Fn(&Source) -> Option<(u32, u32)>,
    ) -> Result<(), Vec<ValidationError>> {
        let mut errors = Vec::new();
        let (mut start, mut layers) = (0.0, 0);
        let mut duration_reported = false;
        for (i, clip) in template.clips.iter().enumerate() {
            start += clip.duration - if i + 1 < template.clips.len() { clip.transition.duration() } else { 0.0 };
            if !duration_reported && start > self.max_duration {
                duration_reported = true;
                errors.push(ValidationError::new(
                    format!("clips[{i}].duration"),
                    format!(
                        "the video would be {:.0} s long by the end of clip {:?}; this deployment renders videos of at most {} s",
                        template.duration(),
                        clip.id,
                        self.max_duration
                    ),
                ));
            }
            let before = layers;
            layers += clip.layers.len();
            if before <= self.max_layers && layers > self.max_layers {
                errors.push(ValidationError::new(
                    format!("clips[{i}].layers"),
                    format!(
                        "clip {:?}: the template has more than {} layers; this deployment renders at most {}",
                        clip.id, self.max_layers, self.max_layers
                    ),
                ));
            }
            for (j, layer) in clip.layers.iter().enumerate() {
                let Some(frame) = layer.content.frame() else { continue };
                let canvas = &template.canvas;
                for (field, value, side) in
                    [("width", frame.width, canvas.width), ("height", frame.height, canvas.height)]
                {
                    let most = self.max_layer_scale * f64::from(side);
                    if value > most {
                        errors.push(ValidationError::new(
                            format!("clips[{i}].layers[{j}].{field}"),
                            format!(
                                "layer {:?}: a {field} of {value} px is more than {} times the canvas's {side} px (at most {most} px)",
                                layer.id, self.max_layer_scale
                            ),
                        ));
                    }
                }
            }
        }
        if errors.is_empty() {
            let estimate = Estimate::of(template, quality, &Output::default(), source_size);
            if estimate.peak_memory > self.max_render_memory {
                errors.push(ValidationError::new(
                    "clips",
                    format!(
                        "a render at {}×{} would need about {} MiB of memory for its layers and frames; \
                         this deployment renders with at most {} MiB: use fewer or smaller layers",
                        estimate.width,
                        estimate.height,
                        estimate.peak_memory >> 20,
                        self.max_render_memory >> 20
                    ),
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests;
