//! Template variables (spec §2.6): the replaceable layers as the API lists them, and the
//! check of a text value against its variable's rules.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::layer::{Content, Layer, TextLayer};
use super::rich;
use super::types::{Clip, Source, Template};

/// Most elements a job's text value may have open at once. Markup this renderer takes
/// needs six at most (`<ul><li><p><b><i><color>`); a deeper value is hostile or generated
/// by mistake, and is refused at the first element too many, before the rest is read.
pub(crate) const VALUE_MAX_DEPTH: usize = 32;

/// Bytes of text and markup a job's text value may have per visible character its
/// variable allows (`maximum_length`): room for every character in its own
/// `<color value="#rrggbb">…</color>` (32 bytes with the character).
pub(crate) const VALUE_BYTES_PER_CHARACTER: usize = 32;

/// Bytes a job's text value may have beyond [`VALUE_BYTES_PER_CHARACTER`] per character:
/// block markup, indentation and entities of short values.
pub(crate) const VALUE_EXTRA_BYTES: usize = 4096;

/// Bytes a job's text value may never exceed, whatever its variable's `maximum_length`.
pub(crate) const VALUE_MAX_BYTES: usize = 1024 * 1024;

/// A variable as the API shows it in a template's `variables` (spec §2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateVariable {
    /// Key of the value in a job's `template_variables`.
    pub id: Uuid,
    /// Label of the variable.
    pub name: String,
    /// Ordering hint.
    pub weight: f64,
    /// `text`, `image`, `video`, `sound` or `captions`.
    #[serde(rename = "type")]
    pub kind: VariableType,
    /// What a value must satisfy; depends on the type.
    pub requirements: Requirements,
    /// The template's own content: text as HTML paragraphs, media as a file address.
    pub default: String,
    /// Id of the clip that holds the variable.
    pub clip_id: String,
}

/// The variable a client names by `key`: its id, or its name (case and surrounding space
/// ignored) where no other variable has the same one. The error says why none is found.
pub fn variable_by_key<'a>(variables: &'a [TemplateVariable], key: &str) -> Result<&'a TemplateVariable, String> {
    let key = key.trim();
    if let Some(variable) = variables.iter().find(|v| v.id.to_string().eq_ignore_ascii_case(key)) {
        return Ok(variable);
    }
    let mut named = variables.iter().filter(|v| v.name.trim().to_lowercase() == key.to_lowercase());
    let key_shown = shown(key);
    match (named.next(), named.next()) {
        (Some(variable), None) => Ok(variable),
        (Some(_), Some(_)) => Err(format!("{key_shown:?} names several variables of this template; use a variable id")),
        (None, _) => {
            let mut names: Vec<String> =
                variables.iter().take(LISTED_NAMES).map(|v| shown(&v.name).into_owned()).collect();
            if variables.len() > LISTED_NAMES {
                names.push(format!("and {} more", variables.len() - LISTED_NAMES));
            }
            Err(format!("{key_shown:?} is no variable of this template (its variables: {})", names.join(", ")))
        }
    }
}

/// Variable names an unknown key's error lists.
const LISTED_NAMES: usize = 20;

/// Longest key or name an error repeats, in characters.
const SHOWN_CHARS: usize = 64;

/// `text`, cut at [`SHOWN_CHARS`] characters (ending with `…`) when longer.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::shortened(text, SHOWN_CHARS)
}

/// The type of a variable, from its layer's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariableType {
    Text,
    Image,
    Video,
    Sound,
    Captions,
}

impl VariableType {
    /// The type as the API names it to clients: one of the four the API's specification
    /// knows (`text`, `image`, `video`, `sound`), a captions layer's being `text` (its
    /// value is an SRT or WebVTT text, or the address of such a file) with the
    /// [`format`](VariableType::format) `captions`.
    pub fn spec_type(self) -> &'static str {
        match self {
            VariableType::Captions => "text",
            other => other.as_str(),
        }
    }

    /// What a value holds beyond its [`spec_type`](VariableType::spec_type), where that
    /// does not say it all: `captions` (cues) for a captions layer.
    pub fn format(self) -> Option<&'static str> {
        (self == VariableType::Captions).then_some("captions")
    }

    /// The type's own name (templates, the console): `text`, `image`, `video`, `sound`,
    /// `captions`.
    pub fn as_str(self) -> &'static str {
        match self {
            VariableType::Text => "text",
            VariableType::Image => "image",
            VariableType::Video => "video",
            VariableType::Sound => "sound",
            VariableType::Captions => "captions",
        }
    }
}

impl Content {
    /// The type of a variable on a layer with this content; `None` for shapes.
    pub fn variable_type(&self) -> Option<VariableType> {
        match self {
            Content::Text(_) => Some(VariableType::Text),
            Content::Image(_) => Some(VariableType::Image),
            Content::Video(_) => Some(VariableType::Video),
            Content::Sound(_) => Some(VariableType::Sound),
            Content::Captions(_) => Some(VariableType::Captions),
            Content::Shape(_) | Content::Lottie(_) => None,
        }
    }
}

/// Requirements by type, serialised as a plain object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Requirements {
    /// From the text layer's settings; lengths count visible characters.
    Text { multiline: bool, minimum_length: u32, maximum_length: u32 },
    /// The layer's box in pixels and how long it shows, in seconds.
    Video { width: u32, height: u32, duration: f64 },
    /// The layer's box in pixels (the image covers it).
    Image { width: u32, height: u32 },
    /// How long the layer plays (sound) or shows (captions), in seconds.
    Sound { duration: f64 },
}

impl Template {
    /// Every source of the template, in document order, with its JSON path
    /// (`clips[0].layers[2].source`, `soundtrack.source`) and what it is used as (`None`
    /// for a Lottie animation, which is no variable's type).
    pub fn sources_at(&self) -> Vec<(String, &Source, Option<VariableType>)> {
        let mut found = Vec::new();
        for (c, clip) in self.clips.iter().enumerate() {
            for (l, layer) in clip.layers.iter().enumerate() {
                if let Some(source) = layer.content.source() {
                    found.push((format!("clips[{c}].layers[{l}].source"), source, layer.content.variable_type()));
                }
            }
        }
        if let Some(soundtrack) = &self.soundtrack {
            found.push(("soundtrack.source".into(), &soundtrack.source, Some(VariableType::Sound)));
        }
        found
    }

    /// The variables, clip by clip in layer order. `resolve` gives the address of an
    /// `asset` or `file` default source (a `url` is used as it is).
    pub fn variables(&self, resolve: impl Fn(&Source) -> String) -> Vec<TemplateVariable> {
        self.variable_layers()
            .filter_map(|(clip, layer)| {
                let variable = layer.variable.as_ref()?;
                let (kind, requirements, default) = describe(clip, layer, &resolve)?;
                Some(TemplateVariable {
                    id: variable.id,
                    name: variable.name.clone(),
                    weight: variable.weight,
                    kind,
                    requirements,
                    default,
                    clip_id: clip.id.clone(),
                })
            })
            .collect()
    }

    /// The layer whose variable has this id, with its clip.
    pub fn variable_layer(&self, id: Uuid) -> Option<(&Clip, &Layer)> {
        self.variable_layers().find(|(_, layer)| layer.variable.as_ref().is_some_and(|v| v.id == id))
    }

    /// Checks a job's value for a text variable: valid markup, visible length within
    /// `minimum_length..=maximum_length`, and one line (no `<br/>`, `<li>` or second
    /// paragraph) when the variable is not multiline. The error names the variable.
    pub fn check_text_value(&self, variable_id: &str, value: &str) -> Result<(), String> {
        let layer = Uuid::parse_str(variable_id).ok().and_then(|id| self.variable_layer(id)).map(|(_, layer)| layer);
        let Some(layer) = layer else {
            return Err(format!("{variable_id:?} is not a variable of this template"));
        };
        let name = layer.variable.as_ref().map(|v| v.name.as_str()).unwrap_or_default();
        let Content::Text(text) = &layer.content else {
            return Err(format!("variable {name:?} is a {} variable, not a text variable", layer.content.kind_name()));
        };
        check_value_size(text, value)
            .and_then(|()| check_value(text, value))
            .map_err(|problem| format!("variable {name:?}: value {problem}"))
    }

    fn variable_layers(&self) -> impl Iterator<Item = (&Clip, &Layer)> {
        self.clips
            .iter()
            .flat_map(|clip| clip.layers.iter().map(move |layer| (clip, layer)))
            .filter(|(_, layer)| layer.variable.is_some())
    }
}

/// Type, requirements and default of a variable layer (`None` for shapes, which cannot
/// be variables).
fn describe(
    clip: &Clip,
    layer: &Layer,
    resolve: &impl Fn(&Source) -> String,
) -> Option<(VariableType, Requirements, String)> {
    let address = |source: &Source| match source {
        Source::Url { url } => url.clone(),
        other => resolve(other),
    };
    let duration = layer.duration_in(clip.duration);
    Some(match &layer.content {
        Content::Text(text) => (
            VariableType::Text,
            Requirements::Text {
                multiline: text.multiline,
                minimum_length: text.minimum_length,
                maximum_length: text.maximum_length,
            },
            as_paragraphs(&text.text),
        ),
        Content::Image(image) => (
            VariableType::Image,
            Requirements::Image { width: pixels(image.frame.width), height: pixels(image.frame.height) },
            address(&image.source),
        ),
        Content::Video(video) => (
            VariableType::Video,
            Requirements::Video { width: pixels(video.frame.width), height: pixels(video.frame.height), duration },
            address(&video.source),
        ),
        Content::Sound(sound) => (VariableType::Sound, Requirements::Sound { duration }, address(&sound.source)),
        Content::Captions(captions) => (
            VariableType::Captions,
            Requirements::Sound { duration },
            match (&captions.source, &captions.cues) {
                (Some(source), _) => address(source),
                (None, Some(cues)) => crate::captions::to_vtt(cues),
                (None, None) => String::new(),
            },
        ),
        Content::Shape(_) | Content::Lottie(_) => return None,
    })
}

/// A box size rounded to whole pixels.
fn pixels(size: f64) -> u32 {
    // `as` saturates: negative and NaN sizes (refused by validation) become 0.
    size.round() as u32
}

/// Text markup as HTML paragraphs: wrapped in `<p>…</p>` unless it already has block
/// elements (`<p>`, `<ul>`, `<ol>`), which cannot go inside a paragraph.
fn as_paragraphs(markup: &str) -> String {
    let lower = markup.to_ascii_lowercase();
    let has_blocks = ["<p>", "<p ", "<ul", "<ol"].iter().any(|tag| lower.contains(tag));
    if has_blocks {
        markup.to_owned()
    } else {
        format!("<p>{markup}</p>")
    }
}

/// The most bytes (text and markup, as given) a job's value for a text layer with these
/// rules may have: [`VALUE_BYTES_PER_CHARACTER`] per visible character allowed plus
/// [`VALUE_EXTRA_BYTES`], at most [`VALUE_MAX_BYTES`].
pub(crate) fn value_max_bytes(rules: &TextLayer) -> usize {
    (rules.maximum_length.max(1) as usize)
        .saturating_mul(VALUE_BYTES_PER_CHARACTER)
        .saturating_add(VALUE_EXTRA_BYTES)
        .min(VALUE_MAX_BYTES)
}

/// Refuses a job's text value (plain text or markup, as given) longer than
/// [`value_max_bytes`]: checked before it is escaped or parsed, so a huge value costs
/// nothing. The error is a predicate, as [`check_text`]'s.
pub(crate) fn check_value_size(rules: &TextLayer, raw: &str) -> Result<(), String> {
    let limit = value_max_bytes(rules);
    if raw.len() > limit {
        return Err(format!(
            "is too long: {} bytes of text and markup, at most {limit} accepted for a variable of at most {} \
             visible characters",
            raw.len(),
            rules.maximum_length
        ));
    }
    Ok(())
}

/// [`check_text`] for a job's value: also refuses elements nested more than
/// [`VALUE_MAX_DEPTH`] deep.
pub(crate) fn check_value(rules: &TextLayer, markup: &str) -> Result<(), String> {
    check_parsed(rules, rich::RichText::parse_with_max_depth(markup, VALUE_MAX_DEPTH))
}

/// Checks `markup` against a text layer's value rules. The error is a predicate for the
/// caller to prefix with its subject (`text …`, `value …`).
pub(crate) fn check_text(rules: &TextLayer, markup: &str) -> Result<(), String> {
    check_parsed(rules, rich::parse(markup))
}

fn check_parsed(rules: &TextLayer, parsed: Result<rich::RichText, rich::RichTextError>) -> Result<(), String> {
    let parsed = parsed.map_err(|e| format!("is not valid markup {e}"))?;
    let length = parsed.visible_len();
    let (min, max) = (rules.minimum_length as usize, rules.maximum_length as usize);
    if length < min {
        return Err(format!("has {length} visible characters; at least {min} required"));
    }
    if length > max {
        return Err(format!("has {length} visible characters; at most {max} allowed"));
    }
    if !rules.multiline && parsed.has_line_breaks() {
        return Err("must be a single line (multiline is false): no <br/>, <li> or second paragraph".to_owned());
    }
    Ok(())
}
