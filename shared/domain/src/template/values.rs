//! Applying a job's variable values to a template (spec §4.7.1): the render works on a
//! copy of the template with each variable layer's content replaced.
//!
//! Keys are variable ids (uuids). Values by variable type:
//! - text: a plain string (literal text: HTML special characters are escaped, a newline
//!   becomes a line break) or `{"type": "rich-text", "value": markup}`; checked against the
//!   layer's `multiline`, `minimum_length` and `maximum_length` (visible characters). A
//!   value of more than 32 bytes per character of `maximum_length` plus 4 KiB (1 MiB at
//!   most), or with more than 32 elements open at once, is refused before it is parsed to
//!   its end, so no value costs more than a linear pass over that many bytes;
//! - image, video: a string that is an `http(s)://` address (fetched at render time) or,
//!   otherwise, an asset id; `null` keeps the template's placeholder;
//! - sound: as image, or a text-to-speech object `{"type": "tts", "value", "identifier"}`
//!   (checked by [`crate::tts::Speech`]; the layer keeps its placeholder source in the
//!   applied template and the worker replaces it with the synthesised speech, see
//!   [`speech_values`]);
//! - captions: a string that is an `http(s)://` address of an SRT or WebVTT file (fetched
//!   at render time), `{"type": "captions", "value": "<SRT or WebVTT text>"}` (read now:
//!   an error names the line) or an array of cues `[{"start", "end", "text"}]`.
//!
//! Every problem is reported at once, each naming its variable.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::layer::{Content, Layer, TextLayer};
use super::types::{Source, Template};
use super::validate::check_cues;
use super::variables::{check_value, check_value_size};
use crate::captions::Cue;

/// Longest SRT or WebVTT text a captions value may have.
pub const CAPTIONS_MAX_BYTES: usize = 1024 * 1024;
use crate::tts::{is_speech, Speech};
use crate::tts::{Catalog, Unchecked};

/// A value that cannot be applied, with the id of its variable (the key as given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct ValueError {
    /// The key of the value in `template_variables` (normally the variable's uuid).
    pub variable: String,
    /// What is wrong, naming the variable.
    pub message: String,
}

impl ValueError {
    fn new(variable: &str, message: impl Into<String>) -> ValueError {
        ValueError { variable: variable.to_owned(), message: message.into() }
    }
}

/// The template with `values` applied (variables without a value, or with `null`, keep
/// their default). `Err` lists every value that cannot be applied. Text-to-speech values
/// are checked for their form only; [`apply_values_with`] checks their voices too.
pub fn apply_values(template: &Template, values: &serde_json::Map<String, Value>) -> Result<Template, Vec<ValueError>> {
    apply_values_with(template, values, &Unchecked)
}

/// [`apply_values`], checking text-to-speech values against `catalog` (the voices this
/// deployment offers).
pub fn apply_values_with(
    template: &Template,
    values: &serde_json::Map<String, Value>,
    catalog: &dyn Catalog,
) -> Result<Template, Vec<ValueError>> {
    let mut out = template.clone();
    let mut errors = Vec::new();
    for (key, value) in values {
        let Some(layer) = Uuid::parse_str(key).ok().and_then(|id| variable_layer_mut(&mut out, id)) else {
            errors.push(ValueError::new(
                key,
                format!("unknown variable {key:?}: the template has no variable with this id"),
            ));
            continue;
        };
        if let Err(message) = apply(layer, value, catalog) {
            errors.push(ValueError::new(key, message));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn variable_layer_mut(template: &mut Template, id: Uuid) -> Option<&mut Layer> {
    template
        .clips
        .iter_mut()
        .flat_map(|clip| clip.layers.iter_mut())
        .find(|layer| layer.variable.as_ref().is_some_and(|v| v.id == id))
}

/// Replaces the content of one variable layer; the error names the variable.
fn apply(layer: &mut Layer, value: &Value, catalog: &dyn Catalog) -> Result<(), String> {
    let name = layer.variable.as_ref().map(|v| v.name.clone()).unwrap_or_default();
    let who = format!("variable {name:?}");
    if value.is_null() {
        return Ok(());
    }
    match &mut layer.content {
        Content::Text(text) => {
            let markup = text_markup(value, text).map_err(|problem| format!("{who}: {problem}"))?;
            check_value(text, &markup).map_err(|problem| format!("{who}: value {problem}"))?;
            text.text = markup;
        }
        Content::Image(image) => image.source = media_source(value, "image").map_err(|p| format!("{who}: {p}"))?,
        Content::Video(video) => video.source = media_source(value, "video").map_err(|p| format!("{who}: {p}"))?,
        Content::Sound(sound) => {
            if is_speech(value) {
                // The source stays the placeholder: the worker puts the speech in its place.
                Speech::from_value(value, catalog).map_err(|e| format!("{who}: {e}"))?;
                return Ok(());
            }
            sound.source = media_source(value, "sound").map_err(|p| format!("{who}: {p}"))?;
        }
        Content::Captions(captions) => {
            let (source, cues) = captions_value(value).map_err(|p| format!("{who}: {p}"))?;
            (captions.source, captions.cues, captions.speech) = (source, cues, None);
        }
        Content::Shape(_) | Content::Lottie(_) => {
            return Err(format!("{who}: a {} layer cannot take a value", layer.content.kind_name()))
        }
    }
    Ok(())
}

/// The cues of a captions value: the address of a file, or cues (from an SRT or WebVTT
/// text, plain or as `{"type": "captions", "value": …}`, or given one by one).
fn captions_value(value: &Value) -> Result<(Option<Source>, Option<Vec<Cue>>), String> {
    const FORMS: &str = "an http(s) address of an SRT or WebVTT file, the text of one (plain, or as \
                         {\"type\": \"captions\", \"value\": \"…\"}) or an array of {\"start\", \"end\", \"text\"} cues";
    match value {
        // One line with a scheme is an address; anything else is the file's text.
        Value::String(text) if !text.trim().contains('\n') && text.contains("://") => {
            match media_source(value, "captions file")? {
                url @ Source::Url { .. } => Ok((Some(url), None)),
                _ => Err(format!("expected {FORMS}")),
            }
        }
        Value::String(text) => Ok((None, Some(captions_text(text)?))),
        Value::Object(object) => {
            if object.get("type").and_then(Value::as_str) != Some("captions") {
                return Err(format!("expected {FORMS}"));
            }
            if let Some(extra) = object.keys().find(|k| !matches!(k.as_str(), "type" | "value")) {
                return Err(format!("unknown field {extra:?} in a captions value"));
            }
            let Some(Value::String(text)) = object.get("value") else {
                return Err("a captions value needs \"value\": the text of an SRT or WebVTT file".into());
            };
            Ok((None, Some(captions_text(text)?)))
        }
        Value::Array(_) => {
            let cues: Vec<Cue> = serde_json::from_value(value.clone()).map_err(|e| format!("expected {FORMS}: {e}"))?;
            check_cues(&cues).map_err(|(_, problem)| problem)?;
            Ok((None, Some(cues)))
        }
        _ => Err(format!("expected {FORMS}")),
    }
}

/// The cues of an SRT or WebVTT text.
fn captions_text(text: &str) -> Result<Vec<Cue>, String> {
    if text.len() > CAPTIONS_MAX_BYTES {
        return Err(format!("the captions text is longer than {CAPTIONS_MAX_BYTES} bytes"));
    }
    crate::captions::parse(text).map_err(|e| format!("the captions text, {e}"))
}

/// The text-to-speech values among `values`, by the id of the sound layer they replace
/// (values that are not valid speech for `catalog` are left out: [`apply_values_with`]
/// reports them).
pub fn speech_values(
    template: &Template,
    values: &serde_json::Map<String, Value>,
    catalog: &dyn Catalog,
) -> Vec<(String, Speech)> {
    let mut out = Vec::new();
    for (key, value) in values.iter().filter(|(_, v)| is_speech(v)) {
        let Some((_, layer)) = Uuid::parse_str(key).ok().and_then(|id| template.variable_layer(id)) else { continue };
        if !matches!(layer.content, Content::Sound(_)) {
            continue;
        }
        if let Ok(speech) = Speech::from_value(value, catalog) {
            out.push((layer.id.clone(), speech));
        }
    }
    out
}

/// The markup of a text value: a plain string (escaped) or a rich-text object, refused
/// when longer than `rules` accept (before it is copied or escaped).
fn text_markup(value: &Value, rules: &TextLayer) -> Result<String, String> {
    let sized = |raw: &str| check_value_size(rules, raw).map_err(|problem| format!("value {problem}"));
    match value {
        Value::String(plain) => {
            sized(plain)?;
            Ok(escape(plain))
        }
        Value::Object(object) => {
            match object.get("type").and_then(Value::as_str) {
                Some("rich-text") => {}
                Some(other) => return Err(format!("unknown text value type {other:?}; use \"rich-text\"")),
                None => return Err("a text value object needs \"type\": \"rich-text\"".to_owned()),
            }
            if let Some(extra) = object.keys().find(|k| !matches!(k.as_str(), "type" | "value")) {
                return Err(format!("unknown field {extra:?} in a rich-text value"));
            }
            match object.get("value") {
                Some(Value::String(markup)) => {
                    sized(markup)?;
                    Ok(markup.clone())
                }
                _ => Err("a rich-text value needs \"value\": a string of markup".to_owned()),
            }
        }
        _ => Err("expected a string or {\"type\": \"rich-text\", \"value\": …}".to_owned()),
    }
}

/// Plain text as markup showing exactly that text: `& < > " '` escaped, newlines as
/// `<br/>`.
fn escape(plain: &str) -> String {
    crate::html::escape(&plain.replace("\r\n", "\n")).replace('\n', "<br/>")
}

/// The source of an image, video or sound value: an address or an asset id.
fn media_source(value: &Value, kind: &str) -> Result<Source, String> {
    let Value::String(text) = value else {
        return Err(format!("expected a string (the address of the {kind} or an asset id) or null"));
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("the {kind} value is empty; give an address or an asset id (or null for the placeholder)"));
    }
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let ok = url::Url::parse(text).is_ok_and(|u| u.host_str().is_some_and(|h| !h.is_empty()));
        if !ok {
            return Err(format!("{text:?} is not a valid http(s) address"));
        }
        return Ok(Source::Url { url: text.to_owned() });
    }
    if text.contains("://") {
        return Err(format!("{text:?}: only http:// and https:// addresses are accepted"));
    }
    Ok(Source::Asset { asset: text.to_owned() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::template::color::Color;
    use crate::template::variables::value_max_bytes;
    use crate::template::{Align, Fit, TextFit, VAlign};
    use crate::template::{Canvas, Clip, Font, Frame, ImageLayer, SoundLayer, TextLayer, Transition, Variable};

    const TITLE: &str = "6f1d1f7e-8d3c-4c38-9a55-1f0c2d3e4f50";
    const PHOTO: &str = "0b7c7f0e-1111-4a2b-8c3d-2e4f5a6b7c8d";
    const MUSIC: &str = "9a8b7c6d-2222-4e5f-9a0b-1c2d3e4f5a6b";

    fn frame() -> Frame {
        Frame { x: 0.0, y: 0.0, width: 100.0, height: 50.0, opacity: 1.0, rotation: 0.0 }
    }

    fn variable(id: &str, name: &str) -> Option<Variable> {
        Some(Variable { id: Uuid::parse_str(id).unwrap(), name: name.into(), weight: 0.0 })
    }

    fn layer(id: &str, var: Option<Variable>, content: Content) -> Layer {
        Layer { id: id.into(), start: 0.0, end: None, variable: var, animations: vec![], content }
    }

    fn template() -> Template {
        let title = TextLayer {
            frame: frame(),
            text: "<p>Hello</p>".into(),
            font: Font { family: "Liberation Sans".into(), size: 20.0, color: Color::WHITE },
            align: Align::Left,
            vertical_align: VAlign::Top,
            line_height: 1.2,
            fit: TextFit::Fixed,
            multiline: false,
            minimum_length: 2,
            maximum_length: 10,
        };
        let photo = ImageLayer { frame: frame(), source: Source::File { file: "a.png".into() }, fit: Fit::Cover };
        let music = SoundLayer {
            source: Source::File { file: "a.mp3".into() },
            volume: 1.0,
            trim_start: 0.0,
            loop_: false,
            fade_in: 0.0,
            fade_out: 0.0,
            voice: false,
            duck: None,
        };
        Template {
            version: 1,
            name: "t".into(),
            category: String::new(),
            tags: vec![],
            canvas: Canvas { width: 320, height: 180, fps: 10, background: Color::BLACK },
            clips: vec![Clip {
                id: "c1".into(),
                duration: 2.0,
                transition: Transition::Cut,
                layers: vec![
                    layer("title", variable(TITLE, "Title"), Content::Text(title)),
                    layer("photo", variable(PHOTO, "Photo"), Content::Image(photo)),
                    layer("music", variable(MUSIC, "Music"), Content::Sound(music)),
                ],
            }],
            soundtrack: None,
            loudness: None,
        }
    }

    fn values(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn content<'a>(t: &'a Template, id: &str) -> &'a Content {
        &t.clips[0].layers.iter().find(|l| l.id == id).unwrap().content
    }

    #[test]
    fn plain_text_is_escaped_into_literal_markup() {
        let t = apply_values(&template(), &values(json!({ TITLE: "A<b>&'" }))).unwrap();
        let Content::Text(text) = content(&t, "title") else { panic!() };
        assert_eq!(text.text, "A&lt;b&gt;&amp;&#39;");
        assert_eq!(crate::template::rich::parse(&text.text).unwrap().plain(), "A<b>&'");
    }

    #[test]
    fn rich_text_is_parsed_and_errors_give_the_position() {
        let t = apply_values(&template(), &values(json!({ TITLE: {"type": "rich-text", "value": "<b>Hi</b> you"} })))
            .unwrap();
        let Content::Text(text) = content(&t, "title") else { panic!() };
        assert_eq!(text.text, "<b>Hi</b> you");
        let errors = apply_values(&template(), &values(json!({ TITLE: {"type": "rich-text", "value": "ab<blink>"} })))
            .unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].variable, TITLE);
        assert!(errors[0].message.contains("variable \"Title\""), "{}", errors[0].message);
        assert!(errors[0].message.contains("at character 2"), "{}", errors[0].message);
    }

    #[test]
    fn text_length_and_single_line_rules_name_the_variable() {
        for (value, expected) in [
            (json!("x"), "at least 2"),
            (json!("far too long a title"), "at most 10"),
            (json!("one\ntwo"), "single line"),
        ] {
            let errors = apply_values(&template(), &values(json!({ TITLE: value }))).unwrap_err();
            assert!(errors[0].message.contains("\"Title\"") && errors[0].message.contains(expected), "{errors:?}");
        }
    }

    #[test]
    fn a_hostile_value_is_refused_before_it_is_parsed() {
        // `<b>` 300,000 times then text: just under the API's 2 MiB body limit.
        let hostile = format!("{}{}", "<b>".repeat(300_000), "x".repeat(2 * 1024 * 1024 - 900_000 - 1_000));
        for value in [json!({"type": "rich-text", "value": hostile}), json!(hostile)] {
            let given = values(json!({ TITLE: value }));
            let start = std::time::Instant::now();
            let errors = apply_values(&template(), &given).unwrap_err();
            let took = start.elapsed();
            assert!(took < std::time::Duration::from_millis(50), "took {took:?}");
            assert_eq!(errors[0].variable, TITLE);
            assert!(
                errors[0].message.starts_with("variable \"Title\": value is too long: 2096152 bytes")
                    && errors[0].message.contains("at most 4416 accepted"),
                "{errors:?}"
            );
        }
    }

    #[test]
    fn values_nested_too_deep_are_refused() {
        let nested =
            |n: usize| json!({"type": "rich-text", "value": format!("{}Hi{}", "<b>".repeat(n), "</b>".repeat(n))});
        assert!(apply_values(&template(), &values(json!({ TITLE: nested(32) }))).is_ok());
        let errors = apply_values(&template(), &values(json!({ TITLE: nested(33) }))).unwrap_err();
        let message = &errors[0].message;
        assert!(
            message.contains("\"Title\"") && message.contains("at character 96: <b> is nested too deep"),
            "{errors:?}"
        );
    }

    #[test]
    fn the_size_limit_follows_the_maximum_length_up_to_a_ceiling() {
        let rules = |maximum_length| {
            let mut t = template();
            let Content::Text(text) = &mut t.clips[0].layers[0].content else { panic!() };
            text.maximum_length = maximum_length;
            text.clone()
        };
        assert_eq!(value_max_bytes(&rules(0)), 32 + 4096);
        assert_eq!(value_max_bytes(&rules(1000)), 32_000 + 4096);
        assert_eq!(value_max_bytes(&rules(u32::MAX)), 1024 * 1024);
        // Every character of a value as long as allowed in its own colour.
        let mut long = template();
        let Content::Text(text) = &mut long.clips[0].layers[0].content else { panic!() };
        text.maximum_length = 1000;
        let rainbow: String = (0..1000).map(|i| format!(r##"<color value="#{:06x}">x</color>"##, i * 997)).collect();
        assert_eq!(rainbow.len(), 32_000);
        assert!(apply_values(&long, &values(json!({ TITLE: {"type": "rich-text", "value": rainbow} }))).is_ok());
    }

    #[test]
    fn unknown_ids_and_wrong_shapes_are_all_reported() {
        let errors = apply_values(
            &template(),
            &values(json!({ "not-a-uuid": "x", "11111111-2222-4333-8444-555555555555": "y", PHOTO: 3 })),
        )
        .unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().any(|e| e.variable == "not-a-uuid" && e.message.contains("unknown variable")));
        assert!(errors.iter().any(|e| e.variable == PHOTO && e.message.contains("\"Photo\"")));
    }

    #[test]
    fn media_values_become_urls_or_assets_and_null_keeps_the_placeholder() {
        let t = apply_values(&template(), &values(json!({ PHOTO: "https://example.com/p.jpg", MUSIC: "asset-42" })))
            .unwrap();
        let Content::Image(image) = content(&t, "photo") else { panic!() };
        assert_eq!(image.source, Source::Url { url: "https://example.com/p.jpg".into() });
        let Content::Sound(sound) = content(&t, "music") else { panic!() };
        assert_eq!(sound.source, Source::Asset { asset: "asset-42".into() });
        let kept = apply_values(&template(), &values(json!({ PHOTO: null, TITLE: null }))).unwrap();
        assert_eq!(kept, template());
        let errors = apply_values(&template(), &values(json!({ PHOTO: "ftp://x/y.png" }))).unwrap_err();
        assert!(errors[0].message.contains("http"), "{errors:?}");
    }

    #[test]
    fn text_to_speech_values_are_checked_and_listed() {
        let tts = json!({ "type": "tts", "value": "Hello", "identifier": "p1;v;f;en-US;neural;none" });
        let errors = apply_values(&template(), &values(json!({ MUSIC: tts }))).unwrap_err();
        assert_eq!(errors[0].variable, MUSIC);
        assert!(
            errors[0].message.contains("variable \"Music\"") && errors[0].message.contains("segment 1 (provider)"),
            "{errors:?}"
        );
        let tts = json!({ "type": "tts", "value": "Hello.", "identifier": "polly;Joanna;female;en-US;neural;none" });
        let given = values(json!({ MUSIC: tts, TITLE: "Hi" }));
        let applied = apply_values(&template(), &given).unwrap();
        let Content::Sound(sound) = content(&applied, "music") else { panic!() };
        assert_eq!(sound.source, Source::File { file: "a.mp3".into() }, "the placeholder stays");
        let speech = speech_values(&template(), &given, &Unchecked);
        assert_eq!(speech.len(), 1);
        assert_eq!((speech[0].0.as_str(), speech[0].1.voice.as_str()), ("music", "Joanna"));
        let errors = apply_values(
            &template(),
            &values(json!({ TITLE: {"type": "tts", "value": "x", "identifier": "espeak;en"} })),
        )
        .unwrap_err();
        assert!(errors[0].message.contains("\"Title\""), "{errors:?}");
    }
}
