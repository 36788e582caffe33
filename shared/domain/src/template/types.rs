//! The template document (format version 1) above the layer level: the template, its
//! canvas, clips, transitions, soundtrack, media sources and animations. Layers are in
//! `layer.rs`. Every struct refuses unknown fields: templates are authored by a dashboard,
//! and a misspelt field must be an import error, not a silently ignored setting.
//!
//! The doc comments are the descriptions of the published JSON Schema
//! (`docs/template.schema.json`); keep them written for template authors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::color::Color;
use super::layer::{Content, Layer};

/// The format version this build reads and writes.
pub const VERSION: u32 = 1;

/// A reelfarm template: a canvas and a sequence of clips, each a stack of timed layers.
/// Fields marked with a `variable` become the template's variables (the values a job
/// replaces). Times are seconds, positions and sizes canvas pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// Format version; must be 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// Name shown in template lists.
    pub name: String,
    /// Category shown in template lists (free text).
    #[serde(default)]
    pub category: String,
    /// Tags shown in template lists.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Size, frame rate and background of the output video.
    pub canvas: Canvas,
    /// The clips, played in this order; at least one. Consecutive clips overlap by the
    /// duration of the transition between them.
    #[schemars(length(min = 1))]
    pub clips: Vec<Clip>,
    /// Music under the whole video, from its start to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soundtrack: Option<Soundtrack>,
    /// Integrated loudness the finished mix is brought to, in LUFS (ITU-R BS.1770), with
    /// its true peak held under −1 dBTP: −14 for most video sites, −16 for Apple, −23 for
    /// EBU R128 broadcast. Absent: the sound is left as mixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -70.0, max = -5.0))]
    pub loudness: Option<f64>,
}

/// The quietest and loudest loudness targets, in LUFS.
pub const LOUDNESS_RANGE: std::ops::RangeInclusive<f64> = -70.0..=-5.0;

/// The output frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Canvas {
    /// Width in pixels: even, 16 to 4096.
    #[schemars(range(min = 16, max = 4096), extend("multipleOf" = 2))]
    pub width: u32,
    /// Height in pixels: even, 16 to 4096.
    #[schemars(range(min = 16, max = 4096), extend("multipleOf" = 2))]
    pub height: u32,
    /// Frames per second, 1 to 60.
    #[schemars(range(min = 1, max = 60))]
    pub fps: u32,
    /// Colour behind every layer (default black).
    #[serde(default = "black")]
    pub background: Color,
}

/// One scene: a duration and the layers shown during it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Clip {
    /// Identifier, unique in the template; the `clip_id` of the clip's variables.
    pub id: String,
    /// Length of the clip in seconds (> 0), including the parts that overlap its
    /// neighbours during transitions.
    pub duration: f64,
    /// How this clip hands over to the next one (default `cut`); ignored on the last clip.
    #[serde(default)]
    pub transition: Transition,
    /// The layers, bottom first: a later layer is drawn over an earlier one.
    #[serde(default)]
    pub layers: Vec<Layer>,
}

/// The change from a clip to the next. A transition of duration `d` overlaps the last `d`
/// seconds of this clip with the first `d` seconds of the next, so it shortens the video
/// by `d`; `d` must be shorter than both clips.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Transition {
    /// The next clip replaces this one at once (no overlap).
    #[default]
    Cut,
    /// This clip fades out while the next fades in over it.
    Crossfade {
        /// Seconds (> 0).
        duration: f64,
    },
    /// This clip fades to a colour during the first half, the next fades in from it during
    /// the second half.
    FadeColor {
        /// Seconds (> 0).
        duration: f64,
        /// The colour passed through (default black).
        #[serde(default = "black")]
        color: Color,
    },
    /// The next clip is revealed by an edge moving in `direction` across the frame.
    Wipe {
        /// Seconds (> 0).
        duration: f64,
        /// Direction the edge moves in.
        direction: Direction,
    },
    /// The next clip slides in, moving in `direction`, pushing this one out.
    Slide {
        /// Seconds (> 0).
        duration: f64,
        /// Direction the clips move in.
        direction: Direction,
    },
}

impl Transition {
    /// The overlap in seconds (0 for `cut`).
    pub fn duration(&self) -> f64 {
        match self {
            Transition::Cut => 0.0,
            Transition::Crossfade { duration }
            | Transition::FadeColor { duration, .. }
            | Transition::Wipe { duration, .. }
            | Transition::Slide { duration, .. } => *duration,
        }
    }
}

/// A direction of movement on the canvas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Towards the left edge.
    Left,
    /// Towards the right edge.
    Right,
    /// Towards the top edge.
    Up,
    /// Towards the bottom edge.
    Down,
}

/// Where a media layer's bytes come from: exactly one of `asset`, `url` or `file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum Source {
    /// An asset of one of reelfarm's media libraries.
    Asset {
        /// The asset id (`metadata.id` of the asset record).
        asset: String,
    },
    /// A file fetched over HTTP(S) at render time.
    Url {
        /// An absolute `http://` or `https://` address.
        url: String,
    },
    /// A file next to the template file (the examples ship their placeholder media this way).
    File {
        /// A relative path, resolved against the template file's directory; never
        /// absolute, never containing `..`.
        file: String,
    },
}

/// Music under the whole video.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Soundtrack {
    /// The audio (or a video, whose sound is used).
    pub source: Source,
    /// Gain, 1 = as recorded (default 1, ≥ 0).
    #[serde(default = "one")]
    pub volume: f64,
    /// Seconds of fade in at the start of the video (default 0).
    #[serde(default)]
    pub fade_in: f64,
    /// Seconds of fade out at the end of the video (default 0).
    #[serde(default)]
    pub fade_out: f64,
    /// Seconds skipped at the start of the source (default 0).
    #[serde(default)]
    pub trim_start: f64,
    /// Start the source again when it ends before the video does (default true).
    #[serde(rename = "loop", default = "yes")]
    pub loop_: bool,
    /// Lowered while speech plays (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duck: Option<Duck>,
}

/// How a sound is lowered while speech plays: text-to-speech values, sound layers marked
/// `voice`, and the sound layers captions layers transcribe. The level goes down by `db`
/// over `attack` seconds before the speech starts, so the first word is clear, and back
/// up over `release` seconds after it ends; the ramps are linear in decibels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Duck {
    /// Decibels the sound is lowered by (default 12; more than 0, at most 60).
    #[serde(default = "duck_db")]
    pub db: f64,
    /// Seconds the level takes to go down (default 0.15; 0 to 5).
    #[serde(default = "duck_attack")]
    pub attack: f64,
    /// Seconds the level takes to come back (default 0.4; 0 to 5).
    #[serde(default = "duck_release")]
    pub release: f64,
}

/// The most a sound is lowered by, in decibels, and the longest ramp, in seconds.
pub const DUCK_MAX_DB: f64 = 60.0;
pub const DUCK_MAX_RAMP: f64 = 5.0;

fn duck_db() -> f64 {
    12.0
}

fn duck_attack() -> f64 {
    0.15
}

fn duck_release() -> f64 {
    0.4
}

/// A change of a layer's appearance over time. Entrance and exit animations run at the
/// start and end of the layer's life; `scale` and `ken_burns` run over all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Animation {
    /// Opacity from 0 to the layer's opacity, from the layer's start.
    FadeIn {
        /// Seconds (> 0, at most the layer's duration).
        duration: f64,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
    /// Opacity from the layer's opacity to 0, ending at the layer's end.
    FadeOut {
        /// Seconds (> 0, at most the layer's duration).
        duration: f64,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
    /// The layer enters moving in `direction`, from just outside its box to its box.
    SlideIn {
        /// Seconds (> 0, at most the layer's duration).
        duration: f64,
        /// Direction of movement.
        direction: Direction,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
    /// The layer leaves moving in `direction`, from its box to just outside it.
    SlideOut {
        /// Seconds (> 0, at most the layer's duration).
        duration: f64,
        /// Direction of movement.
        direction: Direction,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
    /// The layer is scaled about its box centre from `from` to `to` over its whole life.
    Scale {
        /// Scale factor at the layer's start (> 0; 1 = box size).
        from: f64,
        /// Scale factor at the layer's end (> 0).
        to: f64,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
    /// Image and video layers only: the visible window of the fitted source moves from
    /// `from` to `to` over the layer's life (pan and zoom).
    KenBurns {
        /// Window at the layer's start, as fractions of the fitted source.
        from: Rect,
        /// Window at the layer's end, as fractions of the fitted source.
        to: Rect,
        /// Speed curve (default linear).
        #[serde(default)]
        easing: Easing,
    },
}

impl Animation {
    /// The kind as written in JSON, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Animation::FadeIn { .. } => "fade_in",
            Animation::FadeOut { .. } => "fade_out",
            Animation::SlideIn { .. } => "slide_in",
            Animation::SlideOut { .. } => "slide_out",
            Animation::Scale { .. } => "scale",
            Animation::KenBurns { .. } => "ken_burns",
        }
    }

    /// Seconds of an entrance or exit animation; `None` for those spanning the layer.
    pub fn duration(&self) -> Option<f64> {
        match self {
            Animation::FadeIn { duration, .. }
            | Animation::FadeOut { duration, .. }
            | Animation::SlideIn { duration, .. }
            | Animation::SlideOut { duration, .. } => Some(*duration),
            Animation::Scale { .. } | Animation::KenBurns { .. } => None,
        }
    }
}

/// A rectangle as fractions (0 to 1) of the thing it is a part of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rect {
    /// Left edge, fraction of the width.
    pub x: f64,
    /// Top edge, fraction of the height.
    pub y: f64,
    /// Width, fraction of the width (> 0).
    pub width: f64,
    /// Height, fraction of the height (> 0).
    pub height: f64,
}

/// How an animation's progress follows time (quadratic curves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Easing {
    /// Constant speed.
    #[default]
    Linear,
    /// Starts slowly.
    EaseIn,
    /// Ends slowly.
    EaseOut,
    /// Starts and ends slowly.
    EaseInOut,
}

impl Template {
    /// Length of the output video in seconds: the sum of the clip durations minus the
    /// transitions between them (the last clip's transition does not count).
    pub fn duration(&self) -> f64 {
        let clips: f64 = self.clips.iter().map(|c| c.duration).sum();
        clips - self.transitions().sum::<f64>()
    }

    /// Whether the template has a captions layer.
    pub fn has_captions(&self) -> bool {
        self.clips.iter().flat_map(|c| &c.layers).any(|l| matches!(l.content, Content::Captions(_)))
    }

    /// Whether a captions layer shows the voice-over of the sound layer `layer_id`.
    pub fn captions_speech(&self, layer_id: &str) -> bool {
        self.clips
            .iter()
            .flat_map(|c| &c.layers)
            .any(|l| matches!(&l.content, Content::Captions(c) if c.speech.as_deref() == Some(layer_id)))
    }

    /// When each clip starts on the output timeline, in seconds: clip `i` starts at
    /// Σ_{j<i} (duration_j − transition_j).
    pub fn clip_starts(&self) -> Vec<f64> {
        let mut starts = Vec::with_capacity(self.clips.len());
        let mut t = 0.0;
        for clip in &self.clips {
            starts.push(t);
            t += clip.duration - clip.transition.duration();
        }
        starts
    }

    /// The duration of each transition that takes effect (all clips but the last).
    fn transitions(&self) -> impl Iterator<Item = f64> + '_ {
        let n = self.clips.len().saturating_sub(1);
        self.clips[..n].iter().map(|c| c.transition.duration())
    }
}

pub(crate) fn one() -> f64 {
    1.0
}

pub(crate) fn yes() -> bool {
    true
}

pub(crate) fn black() -> Color {
    Color::BLACK
}
