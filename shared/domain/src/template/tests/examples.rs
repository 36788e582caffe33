//! The shipped example templates (`examples/templates/`): each one is valid and renders
//! offline (only `file` sources, all present), their values files apply, their media stay
//! small, and together they use every part of the format.
//!
//! "Every part" comes from the types: the allowed words are read from the schema generated
//! from them ([`json_schema`]), and the walk over a template destructures every struct and
//! matches every enum exhaustively, so a new kind, word or field either stops this file
//! compiling or fails the coverage test until an example uses it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::template::color::Color;
use crate::template::fonts::FAMILIES;
use crate::template::rich::{self, Paragraph, Run};
use crate::template::values::apply_values;
use crate::template::{
    json_schema, Animation, Canvas, CaptionsLayer, Clip, Content, Font, Frame, ImageLayer, Layer, LottieLayer,
    ShapeKind, ShapeLayer, SoundLayer, Soundtrack, Source, Template, TextLayer, Transition, Variable, VariableType,
    VideoLayer,
};

/// Canvas sizes the examples may use: 16:9 (full HD, or 720p), 9:16 and 1:1.
const SIZES: [(u32, u32); 4] = [(1920, 1080), (1280, 720), (1080, 1920), (1080, 1080)];
/// Examples stay short so that test renders are quick.
const SECONDS: std::ops::RangeInclusive<f64> = 6.0..=15.0;
/// Budget for everything in `examples/templates/media/`.
const MEDIA_BYTES: u64 = 1_500_000;

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/templates")
}

/// The `*.json` files directly in `dir`, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Every example template by file stem; panics listing every file that is refused, each
/// with all its errors.
fn examples() -> BTreeMap<String, Template> {
    let mut examples = BTreeMap::new();
    let mut refused = Vec::new();
    for path in json_files(&examples_dir()) {
        match Template::from_json(std::fs::read(&path).unwrap()) {
            Ok(template) => {
                examples.insert(stem(&path), template);
            }
            Err(e) => refused.push(format!("{} ({}):\n{e}", path.display(), e.key())),
        }
    }
    assert!(refused.is_empty(), "example templates refused:\n\n{}", refused.join("\n\n"));
    examples
}

/// `16:9`, `9:16`, `1:1`, … for a canvas.
fn aspect_ratio(canvas: &Canvas) -> String {
    let (mut a, mut b) = (canvas.width, canvas.height);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    format!("{}:{}", canvas.width / a, canvas.height / a)
}

/// Every media source of a template (layers, then the soundtrack).
fn sources(template: &Template) -> Vec<&Source> {
    let layers = template.clips.iter().flat_map(|clip| &clip.layers).filter_map(|layer| layer.content.source());
    layers.chain(template.soundtrack.as_ref().map(|s| &s.source)).collect()
}

#[test]
fn every_example_is_valid_short_and_renders_from_files_that_exist() {
    let dir = examples_dir();
    let examples = examples();
    assert!(examples.len() >= 6, "expected at least six example templates, found {:?}", examples.keys());
    let mut problems = Vec::new();
    let mut variable_ids: HashMap<Uuid, &str> = HashMap::new();
    for (name, template) in &examples {
        let canvas = &template.canvas;
        if !SIZES.contains(&(canvas.width, canvas.height)) {
            problems.push(format!("{name}: canvas {}×{} is none of {SIZES:?}", canvas.width, canvas.height));
        }
        if ![25, 30].contains(&canvas.fps) {
            problems.push(format!("{name}: {} fps; use 25 or 30", canvas.fps));
        }
        if !SECONDS.contains(&template.duration()) {
            problems.push(format!("{name}: lasts {} s; keep examples within {SECONDS:?} s", template.duration()));
        }
        for source in sources(template) {
            match source {
                Source::File { file } if !file.starts_with("media/") => {
                    problems.push(format!("{name}: file {file:?} is not in media/"))
                }
                Source::File { file } if !dir.join(file).is_file() => {
                    problems.push(format!("{name}: file {file:?} does not exist"))
                }
                Source::File { .. } => {}
                Source::Asset { .. } | Source::Url { .. } => {
                    problems.push(format!("{name}: {source:?} needs a server or the network; use a file in media/"))
                }
            }
        }
        for variable in template.variables(|_| String::new()) {
            if let Some(other) = variable_ids.insert(variable.id, name) {
                problems.push(format!("{name}: variable id {} is also used by {other}", variable.id));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_examples_together_use_every_part_of_the_format() {
    let mut coverage = Coverage::default();
    for template in examples().values() {
        coverage.template(template);
    }
    let mut required = required();
    for (part, words) in coverage.possible {
        required.entry(part).or_default().extend(words.into_iter().map(str::to_owned));
    }
    let mut missing = Vec::new();
    for (part, words) in required {
        let used = coverage.seen.remove(&part).unwrap_or_default();
        let unused: Vec<&String> = words.difference(&used).collect();
        if !unused.is_empty() {
            missing.push(format!("{part:?}: no example uses {unused:?}"));
        }
    }
    assert!(missing.is_empty(), "the examples do not cover the format:\n{}", missing.join("\n"));
}

#[test]
fn example_values_apply_to_their_templates_with_addresses_not_files() {
    let examples = examples();
    let files = json_files(&examples_dir().join("values"));
    assert!(files.len() >= 2, "expected values for at least two examples, found {files:?}");
    for path in files {
        let (name, shown) = (stem(&path), path.display());
        let template = examples.get(&name).unwrap_or_else(|| panic!("{shown}: there is no example {name}.json"));
        let values: Map<String, Value> = serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{shown}: not a JSON object: {e}"));
        let applied = apply_values(template, &values).unwrap_or_else(|errors| panic!("{shown}: {errors:#?}"));
        // Speech keeps the placeholder in the applied template: the worker replaces it.
        for (key, _) in values.iter().filter(|(_, value)| !value.is_null() && !crate::tts::is_speech(value)) {
            let (_, layer) = applied.variable_layer(key.parse().unwrap()).unwrap();
            if let Some(source @ (Source::Asset { .. } | Source::File { .. })) = layer.content.source() {
                panic!("{shown}: {key} becomes {source:?}; give media values as https addresses");
            }
        }
    }
}

#[test]
fn example_media_fits_the_budget_and_is_all_used() {
    let used: BTreeSet<String> = examples()
        .values()
        .flat_map(sources)
        .filter_map(|source| match source {
            Source::File { file } => file.strip_prefix("media/").map(str::to_owned),
            Source::Asset { .. } | Source::Url { .. } => None,
        })
        .collect();
    let mut total = 0;
    for entry in std::fs::read_dir(examples_dir().join("media")).unwrap() {
        let entry = entry.unwrap();
        let file = entry.file_name().to_string_lossy().into_owned();
        total += entry.metadata().unwrap().len();
        assert!(file == "generate.sh" || used.contains(&file), "media/{file} is used by no example");
    }
    assert!(total < MEDIA_BYTES, "examples/templates/media holds {total} bytes; keep it under {MEDIA_BYTES}");
}

/// A part of the format whose every word (or setting) some example must use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    LayerKind,
    Shape,
    Transition,
    WipeDirection,
    SlideDirection,
    Animation,
    SlideInDirection,
    SlideOutDirection,
    Easing,
    MediaFit,
    TextFit,
    Align,
    VerticalAlign,
    Font,
    Markup,
    VariableType,
    TextVariable,
    /// Where a captions layer's cues come from.
    CaptionsCues,
    AspectRatio,
    /// A field set to something other than its default.
    Setting,
}

/// The words the examples must use, by part (besides the settings and marks `Coverage`
/// checks, which are all required too).
fn required() -> BTreeMap<Part, BTreeSet<String>> {
    let schema = json_schema();
    let words = |definition: &str| allowed(&schema, definition);
    let list = |items: &[&str]| items.iter().map(|item| item.to_string()).collect::<BTreeSet<_>>();
    BTreeMap::from([
        (Part::LayerKind, words("Layer")),
        (Part::Shape, words("ShapeKind")),
        (Part::Transition, words("Transition")),
        (Part::WipeDirection, words("Direction")),
        (Part::SlideDirection, words("Direction")),
        (Part::Animation, words("Animation")),
        (Part::SlideInDirection, words("Direction")),
        (Part::SlideOutDirection, words("Direction")),
        (Part::Easing, words("Easing")),
        (Part::MediaFit, words("Fit")),
        (Part::TextFit, words("TextFit")),
        (Part::Align, words("Align")),
        (Part::VerticalAlign, words("VAlign")),
        (Part::Font, list(FAMILIES)),
        (Part::VariableType, VARIABLE_TYPES.iter().map(word).collect()),
        (Part::AspectRatio, list(&["16:9", "9:16", "1:1"])),
    ])
}

/// The words of a `$defs` entry of the schema: the `const` of each `oneOf` branch, or of
/// its `kind` property for the enums tagged by `kind`.
fn allowed(schema: &Value, definition: &str) -> BTreeSet<String> {
    let branches = schema["$defs"][definition]["oneOf"].as_array();
    let branches = branches.unwrap_or_else(|| panic!("the schema has no oneOf for {definition}"));
    let mut words = BTreeSet::new();
    for branch in branches {
        let word = branch["const"].as_str().or(branch["properties"]["kind"]["const"].as_str());
        words.insert(word.unwrap_or_else(|| panic!("{definition}: a branch without a word: {branch}")).to_owned());
    }
    words
}

/// Every variable type (not in the schema: it is derived). `variable_type` stops
/// compiling when one is added; add it here too.
const VARIABLE_TYPES: [VariableType; 5] =
    [VariableType::Text, VariableType::Image, VariableType::Video, VariableType::Sound, VariableType::Captions];

#[test]
fn clients_are_told_only_the_four_variable_types_of_the_api() {
    for t in VARIABLE_TYPES {
        assert!(["text", "image", "video", "sound"].contains(&t.spec_type()), "{t:?}");
    }
}

fn variable_type(t: VariableType) -> VariableType {
    match t {
        VariableType::Text
        | VariableType::Image
        | VariableType::Video
        | VariableType::Sound
        | VariableType::Captions => t,
    }
}

/// A value as written in JSON: the string of a plain enum, the `kind` of a tagged one.
fn word(value: &impl Serialize) -> String {
    match serde_json::to_value(value).unwrap() {
        Value::String(word) => word,
        Value::Object(object) => object["kind"].as_str().unwrap().to_owned(),
        other => panic!("not an enum: {other}"),
    }
}

/// What the examples use (`seen`) and, for settings and marks, what they could use
/// (`possible`: every check made, used or not).
#[derive(Default)]
struct Coverage {
    seen: BTreeMap<Part, BTreeSet<String>>,
    possible: BTreeMap<Part, BTreeSet<&'static str>>,
}

impl Coverage {
    fn see(&mut self, part: Part, word: impl Into<String>) {
        self.seen.entry(part).or_default().insert(word.into());
    }

    /// Records `name` as required in `part`, and as used when `used`.
    fn check(&mut self, part: Part, name: &'static str, used: bool) {
        self.possible.entry(part).or_default().insert(name);
        if used {
            self.see(part, name);
        }
    }

    fn setting(&mut self, name: &'static str, used: bool) {
        self.check(Part::Setting, name, used);
    }

    fn template(&mut self, template: &Template) {
        let Template { version: _, name: _, category, tags, canvas, clips, soundtrack, loudness } = template;
        self.setting("loudness", loudness.is_some());
        self.setting("category", !category.is_empty());
        self.setting("tags", !tags.is_empty());
        let Canvas { width: _, height: _, fps: _, background } = canvas;
        self.setting("background", *background != Color::BLACK);
        self.see(Part::AspectRatio, aspect_ratio(canvas));
        for variable in template.variables(|_| String::new()) {
            self.see(Part::VariableType, word(&variable_type(variable.kind)));
        }
        self.setting("soundtrack", soundtrack.is_some());
        if let Some(soundtrack) = soundtrack {
            let Soundtrack { source: _, volume, fade_in, fade_out, trim_start, loop_, duck } = soundtrack;
            self.setting("soundtrack volume", *volume != 1.0);
            self.setting("soundtrack fade_in", *fade_in > 0.0);
            self.setting("soundtrack fade_out", *fade_out > 0.0);
            self.setting("soundtrack trim_start", *trim_start > 0.0);
            self.setting("soundtrack played once", !loop_);
            self.setting("soundtrack ducked", duck.is_some());
        }
        for (i, clip) in clips.iter().enumerate() {
            let Clip { id: _, duration: _, transition, layers } = clip;
            // The last clip's transition is ignored, so it shows nothing.
            if i + 1 < clips.len() {
                self.transition(transition);
            }
            layers.iter().for_each(|layer| self.layer(layer));
        }
    }

    fn transition(&mut self, transition: &Transition) {
        self.see(Part::Transition, word(transition));
        match transition {
            Transition::Cut | Transition::Crossfade { duration: _ } => {}
            Transition::FadeColor { duration: _, color } => self.setting("fade_color colour", *color != Color::BLACK),
            Transition::Wipe { duration: _, direction } => self.see(Part::WipeDirection, word(direction)),
            Transition::Slide { duration: _, direction } => self.see(Part::SlideDirection, word(direction)),
        }
    }

    fn layer(&mut self, layer: &Layer) {
        let Layer { id: _, start, end, variable, animations, content } = layer;
        self.setting("layer start", *start > 0.0);
        self.setting("layer end", end.is_some());
        self.see(Part::LayerKind, content.kind_name());
        if let Some(Variable { id: _, name: _, weight }) = variable {
            self.setting("variable weight", *weight != 0.0);
        }
        animations.iter().for_each(|animation| self.animation(animation));
        match content {
            Content::Text(text) => self.text(text, variable.is_some()),
            Content::Image(ImageLayer { frame, source: _, fit }) => {
                self.frame(frame);
                self.see(Part::MediaFit, word(fit));
            }
            Content::Video(VideoLayer { frame, source: _, fit, trim_start, loop_, volume, mute }) => {
                self.frame(frame);
                self.see(Part::MediaFit, word(fit));
                self.setting("video trim_start", *trim_start > 0.0);
                self.setting("video loop", *loop_);
                self.setting("video volume", *volume != 1.0 && !mute);
                self.setting("video mute", *mute);
            }
            Content::Sound(SoundLayer { source: _, volume, trim_start, loop_, fade_in, fade_out, voice, duck }) => {
                self.setting("sound voice", *voice);
                let _ = duck;
                self.setting("sound volume", *volume != 1.0);
                self.setting("sound trim_start", *trim_start > 0.0);
                self.setting("sound loop", *loop_);
                self.setting("sound fade_in", *fade_in > 0.0);
                self.setting("sound fade_out", *fade_out > 0.0);
            }
            Content::Shape(ShapeLayer { frame, shape, color: _, radius }) => {
                self.frame(frame);
                self.see(Part::Shape, word(shape));
                self.setting("corner radius", *shape == ShapeKind::RoundedRectangle && *radius > 0.0);
            }
            Content::Captions(captions) => self.captions(captions),
            Content::Lottie(LottieLayer { frame, source: _, fit, speed, loop_ }) => {
                self.frame(frame);
                self.see(Part::MediaFit, word(fit));
                self.setting("lottie speed", *speed != 1.0);
                self.setting("lottie loop", *loop_);
            }
        }
    }

    fn frame(&mut self, frame: &Frame) {
        let Frame { x: _, y: _, width: _, height: _, opacity, rotation } = frame;
        self.setting("opacity", *opacity < 1.0);
        self.setting("rotation", *rotation != 0.0);
    }

    fn animation(&mut self, animation: &Animation) {
        self.see(Part::Animation, word(animation));
        let easing = match animation {
            Animation::FadeIn { duration: _, easing }
            | Animation::FadeOut { duration: _, easing }
            | Animation::Scale { from: _, to: _, easing }
            | Animation::KenBurns { from: _, to: _, easing } => easing,
            Animation::SlideIn { duration: _, direction, easing } => {
                self.see(Part::SlideInDirection, word(direction));
                easing
            }
            Animation::SlideOut { duration: _, direction, easing } => {
                self.see(Part::SlideOutDirection, word(direction));
                easing
            }
        };
        self.see(Part::Easing, word(easing));
    }

    fn captions(&mut self, layer: &CaptionsLayer) {
        let CaptionsLayer {
            frame,
            speech,
            source,
            cues,
            font,
            align,
            vertical_align,
            line_height: _,
            max_lines,
            words_per_line,
            highlight,
            background,
            padding,
        } = layer;
        self.frame(frame);
        self.check(Part::CaptionsCues, "speech", speech.is_some());
        self.check(Part::CaptionsCues, "source", source.is_some());
        self.check(Part::CaptionsCues, "cues", cues.is_some());
        self.see(Part::Font, font.family.as_str());
        self.see(Part::Align, word(align));
        self.see(Part::VerticalAlign, word(vertical_align));
        self.setting("captions max_lines", *max_lines != 2);
        self.setting("captions words_per_line", words_per_line.is_some());
        self.setting("captions highlight", highlight.is_some());
        self.setting("captions background", background.is_some());
        self.setting("captions padding", padding.is_some());
    }

    fn text(&mut self, layer: &TextLayer, is_variable: bool) {
        let TextLayer {
            frame,
            text,
            font,
            align,
            vertical_align,
            line_height,
            fit,
            multiline,
            minimum_length,
            maximum_length,
        } = layer;
        self.frame(frame);
        let Font { family, size: _, color } = font;
        self.see(Part::Font, family.as_str());
        self.setting("font colour", *color != Color::WHITE);
        self.see(Part::Align, word(align));
        self.see(Part::VerticalAlign, word(vertical_align));
        self.setting("line_height", *line_height != 1.2);
        self.see(Part::TextFit, word(fit));
        if is_variable {
            self.check(Part::TextVariable, "single-line", !multiline);
            self.check(Part::TextVariable, "multiline", *multiline);
            self.check(Part::TextVariable, "minimum_length", *minimum_length > 0);
            self.check(Part::TextVariable, "maximum_length", *maximum_length != 1000);
        }
        let parsed = rich::parse(text).expect("validated markup parses");
        for Paragraph { bullet, runs } in &parsed.paragraphs {
            self.check(Part::Markup, "<ul>/<ol> list", *bullet);
            for run in runs {
                let Run { text: _, bold, italic, color } = run;
                self.check(Part::Markup, "<br/>", run.is_break());
                self.check(Part::Markup, "<b>", *bold);
                self.check(Part::Markup, "<i>", *italic);
                self.check(Part::Markup, "<color>", color.is_some());
            }
        }
    }
}
