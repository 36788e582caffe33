//! Reading a template from JSON with errors that carry JSON paths.
//!
//! serde's `flatten` and internally tagged enums buffer their input, which loses the path
//! of an error inside them and cannot refuse unknown fields. A layer is therefore read as
//! one flat struct of every layer field (`LayerRepr`, unknown fields refused, each value
//! typed so its errors keep their path) and then checked against its `kind`: a field of
//! another kind, or a missing required one, is an error naming the layer.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use super::color::Color;
use super::error::{TemplateError, ValidationError};
use super::layer::{
    Align, CaptionsLayer, Content, Fit, Font, Frame, ImageLayer, Layer, LottieLayer, ShapeKind, ShapeLayer, SoundLayer,
    TextFit, TextLayer, VAlign, Variable, VideoLayer,
};
use super::types::{Animation, Source, Template, VERSION};
use crate::captions::Cue;

impl Template {
    /// Reads a template: JSON syntax, then its shape (types, required and unknown fields,
    /// reported with the JSON path of the first mismatch), then every rule of
    /// [`Template::validate`] (all problems at once).
    pub fn from_json(json: impl AsRef<[u8]>) -> Result<Template, TemplateError> {
        let value: serde_json::Value = serde_json::from_slice(json.as_ref()).map_err(TemplateError::Json)?;
        // A newer format may differ in shape: say so before any field error does.
        if let Some(version) = value.get("version").filter(|v| v.is_number()) {
            if version.as_u64() != Some(u64::from(VERSION)) {
                return Err(TemplateError::Malformed(ValidationError::new(
                    "version",
                    format!("unsupported template version {version}; this reelfarm reads version {VERSION}"),
                )));
            }
        }
        let template: Template = serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            TemplateError::Malformed(ValidationError::new(path, e.into_inner().to_string()))
        })?;
        template.validate().map_err(TemplateError::Invalid)?;
        Ok(template)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct SourceRepr {
            asset: Option<String>,
            url: Option<String>,
            file: Option<String>,
        }
        match SourceRepr::deserialize(deserializer)? {
            SourceRepr { asset: Some(asset), url: None, file: None } => Ok(Source::Asset { asset }),
            SourceRepr { asset: None, url: Some(url), file: None } => Ok(Source::Url { url }),
            SourceRepr { asset: None, url: None, file: Some(file) } => Ok(Source::File { file }),
            _ => Err(D::Error::custom("a source has exactly one of `asset`, `url` or `file`")),
        }
    }
}

impl<'de> Deserialize<'de> for Layer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Layer, D::Error> {
        LayerRepr::deserialize(deserializer)?.into_layer().map_err(D::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Text,
    Image,
    Video,
    Sound,
    Shape,
    Captions,
    Lottie,
}

/// `fit` of every kind: text takes fixed|shrink, image and video cover|contain|fill.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum AnyFit {
    Fixed,
    Shrink,
    Cover,
    Contain,
    Fill,
}

/// Every field any layer kind has (JSON names), typed; absent ones are `None`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerRepr {
    id: String,
    kind: Kind,
    #[serde(default)]
    start: f64,
    end: Option<f64>,
    variable: Option<Variable>,
    #[serde(default)]
    animations: Vec<Animation>,
    x: Option<f64>,
    y: Option<f64>,
    width: Option<f64>,
    height: Option<f64>,
    opacity: Option<f64>,
    rotation: Option<f64>,
    text: Option<String>,
    font: Option<Font>,
    align: Option<Align>,
    vertical_align: Option<VAlign>,
    line_height: Option<f64>,
    fit: Option<AnyFit>,
    multiline: Option<bool>,
    minimum_length: Option<u32>,
    maximum_length: Option<u32>,
    source: Option<Source>,
    trim_start: Option<f64>,
    #[serde(rename = "loop")]
    loop_: Option<bool>,
    volume: Option<f64>,
    mute: Option<bool>,
    fade_in: Option<f64>,
    fade_out: Option<f64>,
    voice: Option<bool>,
    duck: Option<super::Duck>,
    shape: Option<ShapeKind>,
    color: Option<Color>,
    radius: Option<f64>,
    speech: Option<String>,
    cues: Option<Vec<Cue>>,
    max_lines: Option<u32>,
    words_per_line: Option<u32>,
    highlight: Option<Color>,
    background: Option<Color>,
    padding: Option<f64>,
    speed: Option<f64>,
}

const FRAME: &[&str] = &["x", "y", "width", "height", "opacity", "rotation"];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Image => "image",
            Kind::Video => "video",
            Kind::Sound => "sound",
            Kind::Shape => "shape",
            Kind::Captions => "captions",
            Kind::Lottie => "lottie",
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            Kind::Text => "a text",
            Kind::Image => "an image",
            Kind::Video => "a video",
            Kind::Sound => "a sound",
            Kind::Shape => "a shape",
            Kind::Captions => "a captions",
            Kind::Lottie => "a lottie",
        }
    }

    /// The kind's own fields (besides the common ones and, for visual kinds, the box).
    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::Text => &[
                "text",
                "font",
                "align",
                "vertical_align",
                "line_height",
                "fit",
                "multiline",
                "minimum_length",
                "maximum_length",
            ],
            Kind::Image => &["source", "fit"],
            Kind::Video => &["source", "fit", "trim_start", "loop", "volume", "mute"],
            Kind::Sound => &["source", "volume", "trim_start", "loop", "fade_in", "fade_out", "voice", "duck"],
            Kind::Shape => &["shape", "color", "radius"],
            Kind::Captions => &[
                "speech",
                "source",
                "cues",
                "font",
                "align",
                "vertical_align",
                "line_height",
                "max_lines",
                "words_per_line",
                "highlight",
                "background",
                "padding",
            ],
            Kind::Lottie => &["source", "fit", "speed", "loop"],
        }
    }
}

impl LayerRepr {
    /// The names of the kind-specific fields present in the JSON object.
    fn present(&self) -> Vec<&'static str> {
        let fields = [
            ("x", self.x.is_some()),
            ("y", self.y.is_some()),
            ("width", self.width.is_some()),
            ("height", self.height.is_some()),
            ("opacity", self.opacity.is_some()),
            ("rotation", self.rotation.is_some()),
            ("text", self.text.is_some()),
            ("font", self.font.is_some()),
            ("align", self.align.is_some()),
            ("vertical_align", self.vertical_align.is_some()),
            ("line_height", self.line_height.is_some()),
            ("fit", self.fit.is_some()),
            ("multiline", self.multiline.is_some()),
            ("minimum_length", self.minimum_length.is_some()),
            ("maximum_length", self.maximum_length.is_some()),
            ("source", self.source.is_some()),
            ("trim_start", self.trim_start.is_some()),
            ("loop", self.loop_.is_some()),
            ("volume", self.volume.is_some()),
            ("mute", self.mute.is_some()),
            ("fade_in", self.fade_in.is_some()),
            ("fade_out", self.fade_out.is_some()),
            ("voice", self.voice.is_some()),
            ("duck", self.duck.is_some()),
            ("shape", self.shape.is_some()),
            ("color", self.color.is_some()),
            ("radius", self.radius.is_some()),
            ("speech", self.speech.is_some()),
            ("cues", self.cues.is_some()),
            ("max_lines", self.max_lines.is_some()),
            ("words_per_line", self.words_per_line.is_some()),
            ("highlight", self.highlight.is_some()),
            ("background", self.background.is_some()),
            ("padding", self.padding.is_some()),
            ("speed", self.speed.is_some()),
        ];
        fields.into_iter().filter(|(_, present)| *present).map(|(name, _)| name).collect()
    }

    fn into_layer(self) -> Result<Layer, String> {
        let kind = self.kind;
        let who = format!("layer {:?}", self.id);
        let visual = kind != Kind::Sound;
        for field in self.present() {
            let allowed = kind.fields().contains(&field) || (visual && FRAME.contains(&field));
            if !allowed {
                return Err(format!("{who}: field `{field}` does not apply to {} layer", kind.with_article()));
            }
        }
        let need = |name: &str| format!("{who}: missing field `{name}` (required on {} layers)", kind.name());
        let frame = || -> Result<Frame, String> {
            Ok(Frame {
                x: self.x.ok_or_else(|| need("x"))?,
                y: self.y.ok_or_else(|| need("y"))?,
                width: self.width.ok_or_else(|| need("width"))?,
                height: self.height.ok_or_else(|| need("height"))?,
                opacity: self.opacity.unwrap_or(1.0),
                rotation: self.rotation.unwrap_or(0.0),
            })
        };
        let media_fit = |fit: Option<AnyFit>| match fit {
            None => Ok(Fit::default()),
            Some(AnyFit::Cover) => Ok(Fit::Cover),
            Some(AnyFit::Contain) => Ok(Fit::Contain),
            Some(AnyFit::Fill) => Ok(Fit::Fill),
            Some(other) => Err(format!(
                "{who}: fit `{}` does not apply to {} layer; use `cover`, `contain` or `fill`",
                fit_name(other),
                kind.with_article()
            )),
        };
        let content = match kind {
            Kind::Text => Content::Text(TextLayer {
                frame: frame()?,
                text: self.text.ok_or_else(|| need("text"))?,
                font: self.font.ok_or_else(|| need("font"))?,
                align: self.align.unwrap_or_default(),
                vertical_align: self.vertical_align.unwrap_or_default(),
                line_height: self.line_height.unwrap_or_else(super::layer::one_point_two),
                fit: match self.fit {
                    None => TextFit::default(),
                    Some(AnyFit::Fixed) => TextFit::Fixed,
                    Some(AnyFit::Shrink) => TextFit::Shrink,
                    Some(other) => {
                        return Err(format!(
                            "{who}: fit `{}` does not apply to a text layer; use `fixed` or `shrink`",
                            fit_name(other)
                        ))
                    }
                },
                multiline: self.multiline.unwrap_or(true),
                minimum_length: self.minimum_length.unwrap_or(0),
                maximum_length: self.maximum_length.unwrap_or_else(super::layer::thousand),
            }),
            Kind::Image => Content::Image(ImageLayer {
                frame: frame()?,
                source: self.source.ok_or_else(|| need("source"))?,
                fit: media_fit(self.fit)?,
            }),
            Kind::Video => Content::Video(VideoLayer {
                frame: frame()?,
                source: self.source.ok_or_else(|| need("source"))?,
                fit: media_fit(self.fit)?,
                trim_start: self.trim_start.unwrap_or(0.0),
                loop_: self.loop_.unwrap_or(false),
                volume: self.volume.unwrap_or(1.0),
                mute: self.mute.unwrap_or(false),
            }),
            Kind::Sound => Content::Sound(SoundLayer {
                source: self.source.ok_or_else(|| need("source"))?,
                volume: self.volume.unwrap_or(1.0),
                trim_start: self.trim_start.unwrap_or(0.0),
                loop_: self.loop_.unwrap_or(false),
                fade_in: self.fade_in.unwrap_or(0.0),
                fade_out: self.fade_out.unwrap_or(0.0),
                voice: self.voice.unwrap_or(false),
                duck: self.duck,
            }),
            Kind::Shape => Content::Shape(ShapeLayer {
                frame: frame()?,
                shape: self.shape.unwrap_or_default(),
                color: self.color.ok_or_else(|| need("color"))?,
                radius: self.radius.unwrap_or(0.0),
            }),
            Kind::Lottie => Content::Lottie(LottieLayer {
                frame: frame()?,
                source: self.source.ok_or_else(|| need("source"))?,
                fit: match self.fit {
                    None => Fit::Contain,
                    given => media_fit(given)?,
                },
                speed: self.speed.unwrap_or(1.0),
                loop_: self.loop_.unwrap_or(false),
            }),
            Kind::Captions => {
                let given = [self.speech.is_some(), self.source.is_some(), self.cues.is_some()];
                if given.iter().filter(|g| **g).count() != 1 {
                    return Err(format!(
                        "{who}: a captions layer takes its cues from exactly one of `speech` (a sound layer's id), \
                         `source` (an SRT or WebVTT file) or `cues`"
                    ));
                }
                Content::Captions(CaptionsLayer {
                    frame: frame()?,
                    speech: self.speech,
                    source: self.source,
                    cues: self.cues,
                    font: self.font.ok_or_else(|| need("font"))?,
                    align: self.align.unwrap_or_else(super::layer::center),
                    vertical_align: self.vertical_align.unwrap_or_else(super::layer::bottom),
                    line_height: self.line_height.unwrap_or_else(super::layer::one_point_two),
                    max_lines: self.max_lines.unwrap_or_else(super::layer::two),
                    words_per_line: self.words_per_line,
                    highlight: self.highlight,
                    background: self.background,
                    padding: self.padding,
                })
            }
        };
        Ok(Layer {
            id: self.id,
            start: self.start,
            end: self.end,
            variable: self.variable,
            animations: self.animations,
            content,
        })
    }
}

fn fit_name(fit: AnyFit) -> &'static str {
    match fit {
        AnyFit::Fixed => "fixed",
        AnyFit::Shrink => "shrink",
        AnyFit::Cover => "cover",
        AnyFit::Contain => "contain",
        AnyFit::Fill => "fill",
    }
}
