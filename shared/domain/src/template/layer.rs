//! Layers: one timed element of a clip (text, image, video, sound or shape). In JSON a
//! layer is one flat object: the common fields, a `kind`, and the fields of that kind (for
//! visual kinds including the box, `x`/`y`/`width`/`height`/…). Reading goes through
//! `parse.rs` so that every field error keeps its JSON path.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::color::Color;
use super::types::{one, yes, Animation, Source};
use crate::captions::Cue;

/// A timed element of a clip. Layers are drawn in order, the first at the bottom.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Identifier, unique in the template; error messages name layers by it.
    pub id: String,
    /// When the layer appears, in seconds from the start of its clip (default 0).
    #[serde(default)]
    pub start: f64,
    /// When the layer disappears, in seconds from the start of its clip (default: the
    /// clip's end); after `start`, at most the clip's duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<f64>,
    /// Present when a job may replace this layer's content: the layer becomes a template
    /// variable. Not allowed on shape layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<Variable>,
    /// Entrance, exit and whole-life animations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub animations: Vec<Animation>,
    /// What the layer shows or plays, selected by `kind`.
    #[serde(flatten)]
    pub content: Content,
}

impl Layer {
    /// When the layer disappears, in seconds from the start of a clip of `clip_duration`.
    pub fn end_in(&self, clip_duration: f64) -> f64 {
        self.end.unwrap_or(clip_duration)
    }

    /// How long the layer is visible (or audible) in a clip of `clip_duration`.
    pub fn duration_in(&self, clip_duration: f64) -> f64 {
        self.end_in(clip_duration) - self.start
    }
}

/// Marks a layer as replaceable: its content is a template variable (spec §2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    /// Stable identifier: the key of the value in a job's `template_variables`. Keep it
    /// when editing the template so existing integrations keep working.
    pub id: Uuid,
    /// Label shown to whoever fills in the value.
    pub name: String,
    /// Ordering hint for forms (default 0).
    #[serde(default)]
    pub weight: f64,
}

/// What a layer shows, by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Content {
    /// Rich text in a box.
    Text(TextLayer),
    /// A still image fitted into a box.
    Image(ImageLayer),
    /// A video (with its sound) fitted into a box.
    Video(VideoLayer),
    /// Sound only.
    Sound(SoundLayer),
    /// A filled rectangle.
    Shape(ShapeLayer),
    /// Captions: timed text from a voice-over, a subtitle file or inline cues.
    Captions(CaptionsLayer),
    /// A Lottie animation fitted into a box.
    Lottie(LottieLayer),
}

impl Content {
    /// The kind as written in JSON, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Content::Text(_) => "text",
            Content::Image(_) => "image",
            Content::Video(_) => "video",
            Content::Sound(_) => "sound",
            Content::Shape(_) => "shape",
            Content::Captions(_) => "captions",
            Content::Lottie(_) => "lottie",
        }
    }

    /// The box of a visual layer (`None` for sound).
    pub fn frame(&self) -> Option<&Frame> {
        match self {
            Content::Text(t) => Some(&t.frame),
            Content::Image(i) => Some(&i.frame),
            Content::Video(v) => Some(&v.frame),
            Content::Shape(s) => Some(&s.frame),
            Content::Captions(c) => Some(&c.frame),
            Content::Lottie(l) => Some(&l.frame),
            Content::Sound(_) => None,
        }
    }

    /// The media source of an image, video or sound layer.
    pub fn source(&self) -> Option<&Source> {
        match self {
            Content::Image(i) => Some(&i.source),
            Content::Video(v) => Some(&v.source),
            Content::Sound(s) => Some(&s.source),
            Content::Captions(c) => c.source.as_ref(),
            Content::Lottie(l) => Some(&l.source),
            Content::Text(_) | Content::Shape(_) => None,
        }
    }
}

/// The box of a visual layer, in canvas pixels (origin top left, y down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Frame {
    /// Left edge of the box.
    pub x: f64,
    /// Top edge of the box.
    pub y: f64,
    /// Width of the box (> 0).
    pub width: f64,
    /// Height of the box (> 0).
    pub height: f64,
    /// 0 (invisible) to 1 (opaque); default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = 1))]
    pub opacity: f64,
    /// Degrees clockwise about the box centre (default 0).
    #[serde(default)]
    pub rotation: f64,
}

/// A text layer: rich-text markup laid out in the box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TextLayer {
    /// The box the text is laid out in.
    #[serde(flatten)]
    pub frame: Frame,
    /// The text as rich-text markup (`<p>`, `<b>`, `<i>`, `<br/>`, `<li>`,
    /// `<color value="#rrggbb">`); the variable's default value.
    pub text: String,
    /// Typeface, size and colour.
    pub font: Font,
    /// Horizontal alignment in the box (default left).
    #[serde(default)]
    pub align: Align,
    /// Vertical alignment in the box (default top).
    #[serde(default)]
    pub vertical_align: VAlign,
    /// Distance between baselines as a multiple of the font size (default 1.2, > 0).
    #[serde(default = "one_point_two")]
    pub line_height: f64,
    /// What happens to text that does not fit the box (default `fixed`).
    #[serde(default)]
    pub fit: TextFit,
    /// Whether the text may span several lines (default true). When false, values with
    /// `<br/>`, `<li>` or several paragraphs are refused and the text is kept on one line.
    #[serde(default = "yes")]
    pub multiline: bool,
    /// Fewest visible characters a value may have (default 0; markup is not counted).
    #[serde(default)]
    pub minimum_length: u32,
    /// Most visible characters a value may have (default 1000; markup is not counted).
    #[serde(default = "thousand")]
    pub maximum_length: u32,
}

/// A typeface at a size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Font {
    /// One of the bundled families: `Liberation Sans`, `Liberation Serif`,
    /// `Liberation Mono`. Any other is refused at import, never substituted.
    pub family: String,
    /// Size in canvas pixels (> 0).
    pub size: f64,
    /// Text colour (default white); `<color>` markup overrides it.
    #[serde(default = "white")]
    pub color: Color,
}

/// Horizontal text alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// Lines start at the box's left edge.
    #[default]
    Left,
    /// Lines are centred in the box.
    Center,
    /// Lines end at the box's right edge.
    Right,
}

/// Vertical text alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VAlign {
    /// The text block starts at the box's top edge.
    #[default]
    Top,
    /// The text block is centred in the box.
    Middle,
    /// The text block ends at the box's bottom edge.
    Bottom,
}

/// How text that does not fit its box is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextFit {
    /// Keep the font size; what overflows the box is clipped.
    #[default]
    Fixed,
    /// Shrink the font size until the text fits the box.
    Shrink,
}

/// An image layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageLayer {
    /// The box the image is fitted into.
    #[serde(flatten)]
    pub frame: Frame,
    /// The image (the variable's default value).
    pub source: Source,
    /// How the image is fitted into the box (default `cover`).
    #[serde(default)]
    pub fit: Fit,
}

/// A video layer; it plays from `trim_start` for as long as the layer lasts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VideoLayer {
    /// The box the video is fitted into.
    #[serde(flatten)]
    pub frame: Frame,
    /// The video (the variable's default value).
    pub source: Source,
    /// How the video is fitted into the box (default `cover`).
    #[serde(default)]
    pub fit: Fit,
    /// Seconds skipped at the start of the source (default 0).
    #[serde(default)]
    pub trim_start: f64,
    /// Start the source again when it ends before the layer does (default false: the
    /// last frame is held).
    #[serde(rename = "loop", default)]
    pub loop_: bool,
    /// Gain of the video's sound, 1 = as recorded (default 1, ≥ 0).
    #[serde(default = "one")]
    pub volume: f64,
    /// Drop the video's sound (default false).
    #[serde(default)]
    pub mute: bool,
}

/// How media is fitted into a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// Scale to cover the whole box, keeping proportions; the overflow is cropped
    /// (centred).
    #[default]
    Cover,
    /// Scale to fit inside the box, keeping proportions; the rest stays transparent.
    Contain,
    /// Stretch to the box.
    Fill,
}

/// A sound layer: plays from the layer's start until its end (or the source's end, unless
/// it loops).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SoundLayer {
    /// The audio (the variable's default value).
    pub source: Source,
    /// Gain, 1 = as recorded (default 1, ≥ 0).
    #[serde(default = "one")]
    pub volume: f64,
    /// Seconds skipped at the start of the source (default 0).
    #[serde(default)]
    pub trim_start: f64,
    /// Start the source again when it ends before the layer does (default false).
    #[serde(rename = "loop", default)]
    pub loop_: bool,
    /// Seconds of fade in from the layer's start (default 0).
    #[serde(default)]
    pub fade_in: f64,
    /// Seconds of fade out before the layer's end (default 0).
    #[serde(default)]
    pub fade_out: f64,
    /// Speech: ducked sounds are lowered while it plays (default false; a text-to-speech
    /// value and the sound a captions layer transcribes are speech anyway).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub voice: bool,
    /// Lowered while speech plays (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duck: Option<super::Duck>,
}

/// A filled shape in the box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShapeLayer {
    /// The shape's box.
    #[serde(flatten)]
    pub frame: Frame,
    /// The shape (default `rectangle`).
    #[serde(default)]
    pub shape: ShapeKind,
    /// Fill colour.
    pub color: Color,
    /// Corner radius in pixels of a `rounded_rectangle` (default 0, ≥ 0).
    #[serde(default)]
    pub radius: f64,
}

/// Shapes a shape layer can draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShapeKind {
    /// Fills the box.
    #[default]
    Rectangle,
    /// Fills the box with corners rounded by `radius`.
    RoundedRectangle,
}

/// A captions layer: cues laid out in the box a page at a time (at most `max_lines`
/// lines), the word being spoken optionally highlighted. The cues come from exactly one
/// of `speech`, `source` or `cues`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaptionsLayer {
    /// The box the captions are laid out in.
    #[serde(flatten)]
    pub frame: Frame,
    /// Id of a sound layer: the captions show the text of the text-to-speech value a job
    /// gives it, timed by the synthesis (nothing when the layer plays a recording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<String>,
    /// A SubRip (`.srt`) or WebVTT (`.vtt`) file; its times count from the layer's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Cues given inline; times in seconds from the layer's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cues: Option<Vec<Cue>>,
    /// Typeface, size and colour.
    pub font: Font,
    /// Horizontal alignment in the box (default center).
    #[serde(default = "center")]
    pub align: Align,
    /// Vertical alignment in the box (default bottom).
    #[serde(default = "bottom")]
    pub vertical_align: VAlign,
    /// Distance between baselines as a multiple of the font size (default 1.2, > 0).
    #[serde(default = "one_point_two")]
    pub line_height: f64,
    /// Most lines shown at once (default 2, 1 to 10); a longer cue is shown in pages.
    #[serde(default = "two")]
    #[schemars(range(min = 1, max = 10))]
    pub max_lines: u32,
    /// Most words on one line (default: as many as fit the box's width).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub words_per_line: Option<u32>,
    /// Colour of the word being spoken (default: no highlight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highlight: Option<Color>,
    /// Colour of a box drawn behind the text (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Color>,
    /// Space between the text and the edge of its background box, in pixels (default
    /// a quarter of the font size, ≥ 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding: Option<f64>,
}

impl CaptionsLayer {
    /// The padding of the background box in canvas pixels.
    pub fn padding(&self) -> f64 {
        self.padding.unwrap_or(self.font.size / 4.0)
    }
}

/// A Lottie animation (Bodymovin JSON) fitted into the box; it plays from the layer's
/// start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LottieLayer {
    /// The box the animation is fitted into.
    #[serde(flatten)]
    pub frame: Frame,
    /// The animation: a Lottie JSON or dotLottie file, by `url`, `file` or library `asset`.
    pub source: Source,
    /// How the animation is fitted into the box (default `contain`).
    #[serde(default = "contain")]
    pub fit: Fit,
    /// Playback speed, 1 = as authored (default 1; > 0, at most 100).
    #[serde(default = "one")]
    pub speed: f64,
    /// Start again when it ends before the layer does (default false: the last frame is
    /// held).
    #[serde(rename = "loop", default)]
    pub loop_: bool,
}

/// Fastest playback of a Lottie layer.
pub const LOTTIE_MAX_SPEED: f64 = 100.0;

pub(crate) fn contain() -> Fit {
    Fit::Contain
}

/// Most lines a captions page may have.
pub const CAPTIONS_MAX_LINES: u32 = 10;
/// Most words a captions line may be given.
pub const CAPTIONS_MAX_WORDS_PER_LINE: u32 = 100;

pub(crate) fn two() -> u32 {
    2
}

pub(crate) fn center() -> Align {
    Align::Center
}

pub(crate) fn bottom() -> VAlign {
    VAlign::Bottom
}

pub(crate) fn one_point_two() -> f64 {
    1.2
}

pub(crate) fn thousand() -> u32 {
    1000
}

pub(crate) fn white() -> Color {
    Color::WHITE
}
