//! The fields of a template document the studio's panel shows and edits: for the
//! template, a clip, each kind of layer, animation and transition — how each is typed,
//! what it is when left out, and where the panel groups it. The choices of a field are the
//! names the format's schema lists.

use reelfarm_domain::template::names;

/// How a field is typed and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Number,
    Integer,
    Text,
    LongText,
    Color,
    Bool,
    /// One of the names of this definition of the format's schema
    /// (`reelfarm_domain::template::names`).
    Choice(&'static str),
    /// One of the renderer's font families.
    Font,
    /// A media source: a library asset, an address or a stored file.
    Source,
}

/// What a field is when it is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unset {
    /// It must be there.
    Required,
    /// Left out, it means something of its own (a layer without `end` lasts to its clip's end).
    Absent,
    /// Left out, it is this JSON value.
    Is(&'static str),
}

/// Where the panel shows a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Content,
    /// With the "make variable" switch: what decides the variable's requirements.
    Variable,
    Box,
    Timing,
}

/// A field of the document, at `path` (dots for nested objects) below its object.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub path: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    pub default: Unset,
    pub group: Group,
}

const fn field(path: &'static str, label: &'static str, kind: Kind, default: Unset, group: Group) -> Field {
    Field { path, label, kind, default, group }
}

use Group::{Box as InBox, Content, Timing, Variable};
use Kind::*;
use Unset::{Absent, Is, Required};

/// The definitions of the template format's schema whose names are a field's choices.
const ALIGN: &str = "Align";
const VERTICAL: &str = "VAlign";
const MEDIA_FIT: &str = "Fit";
const DIRECTIONS: &str = "Direction";
const EASINGS: &str = "Easing";
pub const TRANSITIONS: &str = "Transition";
const TEXT_FIT: &str = "TextFit";
const SHAPES: &str = "ShapeKind";

/// The kinds of layer and of animation, as the format names them.
pub fn layer_kinds() -> &'static [&'static str] {
    names("Layer")
}

pub fn animation_kinds() -> &'static [&'static str] {
    names("Animation")
}

pub const TEMPLATE_FIELDS: &[Field] = &[
    field("name", "Name", Text, Required, Content),
    field("category", "Category", Text, Is("\"\""), Content),
    field("canvas.width", "Width (px)", Integer, Required, Content),
    field("canvas.height", "Height (px)", Integer, Required, Content),
    field("canvas.fps", "Frames per second", Integer, Required, Content),
    field("canvas.background", "Background", Color, Is("\"#000000\""), Content),
    field("loudness", "Loudness target (LUFS, e.g. -14; empty: as mixed)", Number, Absent, Content),
];

pub const CLIP_FIELDS: &[Field] =
    &[field("id", "Clip id", Text, Required, Content), field("duration", "Duration (s)", Number, Required, Timing)];

const BOX: &[Field] = &[
    field("x", "x (px)", Number, Required, InBox),
    field("y", "y (px)", Number, Required, InBox),
    field("width", "Width (px)", Number, Required, InBox),
    field("height", "Height (px)", Number, Required, InBox),
    field("opacity", "Opacity (0–1)", Number, Is("1"), InBox),
    field("rotation", "Rotation (°)", Number, Is("0"), InBox),
];

const TIMING: &[Field] = &[
    field("start", "Start in its clip (s)", Number, Is("0"), Timing),
    field("end", "End in its clip (s; empty: the clip's end)", Number, Absent, Timing),
];

const TEXT: &[Field] = &[
    field("text", "Text (rich-text markup)", LongText, Required, Content),
    field("font.family", "Font", Font, Required, Content),
    field("font.size", "Font size (px)", Number, Required, Content),
    field("font.color", "Colour", Color, Is("\"#ffffff\""), Content),
    field("align", "Alignment", Choice(ALIGN), Is("\"left\""), Content),
    field("vertical_align", "Vertical alignment", Choice(VERTICAL), Is("\"top\""), Content),
    field("line_height", "Line height (× size)", Number, Is("1.2"), Content),
    field("fit", "Size", Choice(TEXT_FIT), Is("\"fixed\""), Variable),
    field("multiline", "Several lines", Bool, Is("true"), Variable),
    field("minimum_length", "Fewest characters", Integer, Is("0"), Variable),
    field("maximum_length", "Most characters", Integer, Is("1000"), Variable),
];

const IMAGE: &[Field] = &[
    field("source", "Image", Source, Required, Content),
    field("fit", "Fit", Choice(MEDIA_FIT), Is("\"cover\""), Variable),
];

const VIDEO: &[Field] = &[
    field("source", "Video", Source, Required, Content),
    field("fit", "Fit", Choice(MEDIA_FIT), Is("\"cover\""), Variable),
    field("trim_start", "Skip at the start (s)", Number, Is("0"), Content),
    field("loop", "Loop", Bool, Is("false"), Content),
    field("volume", "Volume", Number, Is("1"), Content),
    field("mute", "Mute", Bool, Is("false"), Content),
];

const SOUND: &[Field] = &[
    field("source", "Sound", Source, Required, Content),
    field("volume", "Volume", Number, Is("1"), Content),
    field("trim_start", "Skip at the start (s)", Number, Is("0"), Content),
    field("loop", "Loop", Bool, Is("false"), Content),
    field("fade_in", "Fade in (s)", Number, Is("0"), Content),
    field("fade_out", "Fade out (s)", Number, Is("0"), Content),
    field("voice", "Speech (ducked sounds give way to it)", Bool, Is("false"), Content),
    field("duck.db", "Duck under speech by (dB; empty: never)", Number, Absent, Content),
    field("duck.attack", "Duck: seconds going down", Number, Absent, Content),
    field("duck.release", "Duck: seconds coming back", Number, Absent, Content),
];

const SHAPE: &[Field] = &[
    field("shape", "Shape", Choice(SHAPES), Is("\"rectangle\""), Content),
    field("color", "Colour", Color, Required, Content),
    field("radius", "Corner radius (px)", Number, Is("0"), Content),
];

/// Captions: their cues (inline, a file or a sound layer's speech) are edited in the
/// document; the panel sets how they look.
const CAPTIONS: &[Field] = &[
    field("speech", "Captions of the sound layer (its id)", Text, Absent, Content),
    field("font.family", "Font", Font, Required, Content),
    field("font.size", "Font size (px)", Number, Required, Content),
    field("font.color", "Colour", Color, Is("\"#ffffff\""), Content),
    field("highlight", "Colour of the spoken word", Color, Absent, Content),
    field("background", "Box colour", Color, Absent, Content),
    field("padding", "Box padding (px)", Number, Absent, Content),
    field("align", "Alignment", Choice(ALIGN), Is("\"center\""), Content),
    field("vertical_align", "Vertical alignment", Choice(VERTICAL), Is("\"bottom\""), Content),
    field("line_height", "Line height (× size)", Number, Is("1.2"), Content),
    field("max_lines", "Most lines at once", Integer, Is("2"), Content),
    field("words_per_line", "Most words on a line", Integer, Absent, Content),
];

const LOTTIE: &[Field] = &[
    field("source", "Lottie animation (JSON or .lottie)", Source, Required, Content),
    field("fit", "Fit", Choice(MEDIA_FIT), Is("\"contain\""), Content),
    field("speed", "Speed (× as authored)", Number, Is("1"), Content),
    field("loop", "Loop", Bool, Is("false"), Content),
];

/// The fields of a layer of `kind` (none for an unknown kind).
pub fn layer_fields(kind: &str) -> Vec<Field> {
    let own: &[Field] = match kind {
        "text" => TEXT,
        "image" => IMAGE,
        "video" => VIDEO,
        "sound" => SOUND,
        "shape" => SHAPE,
        "captions" => CAPTIONS,
        "lottie" => LOTTIE,
        _ => return Vec::new(),
    };
    let mut fields = vec![field("id", "Layer id", Text, Required, Content)];
    fields.extend_from_slice(own);
    if kind != "sound" {
        fields.extend_from_slice(BOX);
    }
    fields.extend_from_slice(TIMING);
    fields
}

/// The editable fields of an animation of `kind`.
pub fn animation_fields(kind: &str) -> &'static [Field] {
    const TIMED: &[Field] = &[
        field("duration", "Duration (s)", Number, Required, Content),
        field("easing", "Easing", Choice(EASINGS), Is("\"linear\""), Content),
    ];
    const SLIDE: &[Field] = &[
        field("duration", "Duration (s)", Number, Required, Content),
        field("direction", "Direction", Choice(DIRECTIONS), Required, Content),
        field("easing", "Easing", Choice(EASINGS), Is("\"linear\""), Content),
    ];
    const SCALE: &[Field] = &[
        field("from", "From (× size)", Number, Required, Content),
        field("to", "To (× size)", Number, Required, Content),
        field("easing", "Easing", Choice(EASINGS), Is("\"linear\""), Content),
    ];
    const KEN_BURNS: &[Field] = &[field("easing", "Easing", Choice(EASINGS), Is("\"linear\""), Content)];
    match kind {
        "fade_in" | "fade_out" => TIMED,
        "slide_in" | "slide_out" => SLIDE,
        "scale" => SCALE,
        "ken_burns" => KEN_BURNS,
        _ => &[],
    }
}

/// The fields of a clip's transition of `kind`.
pub fn transition_fields(kind: &str) -> &'static [Field] {
    const DURATION: Field = field("transition.duration", "Transition (s)", Number, Required, Timing);
    const DIRECTION: Field = field("transition.direction", "Direction", Choice(DIRECTIONS), Required, Timing);
    const COLOR: Field = field("transition.color", "Colour", Color, Is("\"#000000\""), Timing);
    match kind {
        "crossfade" => &[DURATION],
        "fade_color" => &[DURATION, COLOR],
        "wipe" | "slide" => &[DURATION, DIRECTION],
        _ => &[],
    }
}
