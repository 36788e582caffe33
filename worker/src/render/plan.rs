//! The timeline: output size, frame rate and count, where each clip and layer starts and
//! ends in frames and audio samples, and which transition runs at a frame.
//!
//! Frame `n` shows time `n / fps`. A clip or layer covering [start, end) seconds shows on
//! the frames whose time falls in that interval, so a layer starting at 2 s is absent on
//! the frame before 2 s and present on the frame at 2 s. The video has
//! `round(duration × fps)` frames; the sound has exactly as many samples as that many
//! frames last (`frames / fps × 48000`, rounded), so both streams end together.

use reelfarm_domain::template::{Layer, Template, Transition};

use super::Quality;

/// Sample rate of the mix and of the AAC stream.
pub(crate) const SAMPLE_RATE: u32 = 48_000;

/// Slack for times that land on a frame boundary up to floating-point error.
const EPSILON: f64 = 1e-6;

/// The resolved timeline of one render.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Output size in pixels (even).
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Template pixels → output pixels, per axis.
    pub(crate) sx: f64,
    pub(crate) sy: f64,
    /// Factor for font sizes (the shorter side's scale).
    pub(crate) scale: f64,
    pub(crate) fps: u32,
    /// Number of frames of the video.
    pub(crate) frames: u64,
    /// Number of audio samples (per channel).
    pub(crate) samples: u64,
    pub(crate) clips: Vec<ClipSpan>,
}

/// Where a clip sits on the output timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClipSpan {
    /// Seconds.
    pub(crate) start: f64,
    pub(crate) duration: f64,
    /// Frames [first, end).
    pub(crate) first: u64,
    pub(crate) end: u64,
    /// The transition into the next clip (none for the last clip or a cut).
    pub(crate) transition: Option<Transition>,
}

/// Where a layer sits on the output timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LayerSpan {
    /// Seconds from the start of the video.
    pub(crate) start: f64,
    pub(crate) end: f64,
    /// Frames [first, end_frame).
    pub(crate) first: u64,
    pub(crate) end_frame: u64,
}

impl LayerSpan {
    pub(crate) fn duration(&self) -> f64 {
        self.end - self.start
    }

    pub(crate) fn contains(&self, frame: u64) -> bool {
        (self.first..self.end_frame).contains(&frame)
    }
}

/// What frame `n` shows: one clip, or two during a transition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Shot {
    Clip(usize),
    /// Clip `from` hands over to `from + 1`; `progress` runs from 0 to 1.
    Transition {
        from: usize,
        progress: f64,
    },
}

impl Plan {
    pub(crate) fn new(template: &Template, quality: Quality) -> Plan {
        let canvas = &template.canvas;
        let (width, height) = quality.output_size(canvas.width, canvas.height);
        let fps = canvas.fps.max(1);
        let frames = ((template.duration() * f64::from(fps)).round().max(1.0)) as u64;
        let samples = (frames as f64 / f64::from(fps) * f64::from(SAMPLE_RATE)).round() as u64;
        let starts = template.clip_starts();
        let last = template.clips.len().saturating_sub(1);
        let frame_of = |t: f64| frame_at_or_after(t, fps).min(frames);
        let clips = template
            .clips
            .iter()
            .zip(starts)
            .enumerate()
            .map(|(i, (clip, start))| ClipSpan {
                start,
                duration: clip.duration,
                first: frame_of(start),
                end: if i == last { frames } else { frame_of(start + clip.duration) },
                transition: (i < last && clip.transition.duration() > 0.0).then(|| clip.transition.clone()),
            })
            .collect();
        let short = f64::from(canvas.width.min(canvas.height).max(1));
        Plan {
            width,
            height,
            sx: f64::from(width) / f64::from(canvas.width.max(1)),
            sy: f64::from(height) / f64::from(canvas.height.max(1)),
            scale: f64::from(width.min(height)) / short,
            fps,
            frames,
            samples,
            clips,
        }
    }

    /// The plan of the first `seconds` of the video alone (at least one frame): what a
    /// template's preview shows. The whole plan when it is no longer.
    pub(crate) fn cut(mut self, seconds: Option<f64>) -> Plan {
        let Some(seconds) = seconds else { return self };
        let frames = ((seconds * f64::from(self.fps)).round().max(1.0) as u64).min(self.frames);
        if frames < self.frames {
            self.frames = frames;
            self.samples = (frames as f64 / f64::from(self.fps) * f64::from(SAMPLE_RATE)).round() as u64;
            for clip in &mut self.clips {
                (clip.first, clip.end) = (clip.first.min(frames), clip.end.min(frames));
            }
        }
        self
    }

    /// Seconds at frame `n`.
    pub(crate) fn time(&self, n: u64) -> f64 {
        n as f64 / f64::from(self.fps)
    }

    /// Seconds → the first sample at or after it.
    pub(crate) fn sample(&self, t: f64) -> u64 {
        ((t * f64::from(SAMPLE_RATE)).round().max(0.0) as u64).min(self.samples)
    }

    /// The span of `layer` in clip `clip`.
    pub(crate) fn layer(&self, clip: usize, layer: &Layer) -> LayerSpan {
        let span = &self.clips[clip];
        let start = span.start + layer.start;
        let end = span.start + layer.end_in(span.duration);
        LayerSpan {
            start,
            end,
            first: frame_at_or_after(start, self.fps).clamp(span.first, span.end),
            end_frame: frame_at_or_after(end, self.fps).clamp(span.first, span.end),
        }
    }

    /// The clip(s) frame `n` shows.
    pub(crate) fn shot(&self, n: u64) -> Shot {
        for (i, span) in self.clips.iter().enumerate() {
            if n >= span.end {
                continue;
            }
            if let (Some(transition), Some(next)) = (&span.transition, self.clips.get(i + 1)) {
                if n >= next.first {
                    let d = transition.duration();
                    let progress = ((self.time(n) - next.start) / d).clamp(0.0, 1.0);
                    return Shot::Transition { from: i, progress };
                }
            }
            return Shot::Clip(i);
        }
        Shot::Clip(self.clips.len().saturating_sub(1))
    }
}

/// The first frame whose time is at or after `t`.
pub(crate) fn frame_at_or_after(t: f64, fps: u32) -> u64 {
    (t * f64::from(fps) - EPSILON).ceil().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_on_a_boundary_belong_to_what_starts_there() {
        assert_eq!(frame_at_or_after(2.0, 10), 20);
        assert_eq!(frame_at_or_after(0.30000000000000004, 10), 3);
        assert_eq!(frame_at_or_after(0.31, 10), 4);
    }

    #[test]
    fn a_cut_plan_keeps_the_first_seconds_of_every_clip_in_them() {
        let clip = |id: &str, seconds: f64| serde_json::json!({ "id": id, "duration": seconds, "layers": [] });
        let document = serde_json::json!({ "version": 1, "name": "t", "canvas": { "width": 64, "height": 64, "fps": 10 },
                                           "clips": [clip("a", 6.0), clip("b", 3600.0)] });
        let template = Template::from_json(document.to_string()).unwrap();
        let whole = Plan::new(&template, Quality::Default);
        let cut = whole.clone().cut(Some(10.0));
        assert_eq!((whole.frames, cut.frames, cut.samples), (36_060, 100, 480_000));
        assert_eq!(cut.clips.iter().map(|c| (c.first, c.end)).collect::<Vec<_>>(), [(0, 60), (60, 100)]);
        assert_eq!(whole.clone().cut(None), whole);
        assert_eq!(whole.clone().cut(Some(1e6)), whole, "never longer than the video");
    }
}
