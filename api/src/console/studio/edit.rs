//! The studio's edits of a template document: what the property panel, the timeline and
//! the layer buttons send, applied to the document as JSON. A document under edit may
//! break rules (the studio shows every problem at its place), so edits work on the JSON
//! and never need it to be a valid template; a value that does not fit its field's type is
//! kept as typed, so that the shape error names it.

use serde_json::{json, Map, Value};

use super::fields::{
    animation_fields, animation_kinds, layer_fields, layer_kinds, transition_fields, Field, Kind, Unset, CLIP_FIELDS,
    TEMPLATE_FIELDS,
};
use Kind::*;

/// What the panel shows and edits: the template, a clip or a layer (by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    Template,
    Clip(String),
    Layer(String),
}

impl Selection {
    pub fn parse(text: &str) -> Selection {
        match text.split_once(':') {
            Some(("clip", id)) => Selection::Clip(id.to_string()),
            Some(("layer", id)) => Selection::Layer(id.to_string()),
            _ => Selection::Template,
        }
    }

    pub fn key(&self) -> String {
        match self {
            Selection::Template => String::new(),
            Selection::Clip(id) => format!("clip:{id}"),
            Selection::Layer(id) => format!("layer:{id}"),
        }
    }
}

/// A form's fields, as sent.
pub struct Form(pub Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn number(&self, name: &str) -> Result<f64, String> {
        let text = self.get(name).ok_or_else(|| format!("{name} is missing"))?;
        text.trim().parse::<f64>().ok().filter(|n| n.is_finite()).ok_or_else(|| format!("{name} must be a number"))
    }
}

/// The JSON number for `x` (whole numbers without a fraction, as people write them).
pub fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The value at `path` (dots) below `object`.
pub fn get<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(object, |value, key| value.get(key))
}

/// Sets (or with `None` removes) the value at `path` below `object`, making the objects on
/// the way; a non-object on the way is replaced.
fn put(object: &mut Map<String, Value>, path: &str, value: Option<Value>) {
    match path.split_once('.') {
        None => {
            match value {
                Some(value) => object.insert(path.to_string(), value),
                None => object.remove(path),
            };
        }
        Some((head, rest)) => {
            let inner = object.entry(head).or_insert_with(|| json!({}));
            if !inner.is_object() {
                *inner = json!({});
            }
            put(inner.as_object_mut().expect("made an object"), rest, value);
        }
    }
}

/// What `raw` (a form's text for `field`) makes of the field: `None` leaves it out.
fn typed(field: &Field, raw: &str) -> Option<Value> {
    let text = raw.trim();
    let value = match field.kind {
        Bool => Value::Bool(!raw.is_empty()),
        Number | Integer if text.is_empty() => return None,
        Number | Integer => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => number(n),
            // Kept as typed: the document's shape check names the field.
            _ => Value::String(text.to_string()),
        },
        Text | Color | Choice(_) | Font if text.is_empty() && field.default != Unset::Required => return None,
        LongText => Value::String(raw.to_string()),
        _ => Value::String(text.to_string()),
    };
    match field.default {
        Unset::Is(default) if serde_json::from_str::<Value>(default).ok().as_ref() == Some(&value) => None,
        _ => Some(value),
    }
}

/// Sets the `fields` of `object` that `form` sends (named by `prefix` + path); a checkbox
/// the form lists in `checkboxes` and does not send is off.
fn set_fields(object: &mut Map<String, Value>, fields: &[Field], form: &Form, prefix: &str) {
    for field in fields {
        let name = format!("{prefix}{}", field.path);
        let raw = match (form.get(&name), field.kind) {
            (Some(raw), _) => raw,
            (None, Bool) if form.0.iter().any(|(k, v)| k == "checkboxes" && v == &name) => "",
            (None, _) => continue,
        };
        if field.kind == Source {
            let source = match raw.split_once(':') {
                Some(("asset", id)) => json!({ "asset": id }),
                Some(("file", path)) => json!({ "file": path }),
                _ => json!({ "url": form.get(&format!("{name}_url")).unwrap_or_default().trim() }),
            };
            object.insert(field.path.to_string(), source);
            continue;
        }
        put(object, field.path, typed(field, raw));
    }
}

fn clips_mut(doc: &mut Value) -> Result<&mut Vec<Value>, String> {
    doc.get_mut("clips").and_then(Value::as_array_mut).ok_or_else(|| "the document has no list of clips".to_string())
}

/// The index of the clip with `id`.
pub fn find_clip(doc: &Value, id: &str) -> Option<usize> {
    doc.get("clips")?.as_array()?.iter().position(|c| c.get("id").and_then(Value::as_str) == Some(id))
}

/// The clip and layer indexes of the layer with `id`.
pub fn find_layer(doc: &Value, id: &str) -> Option<(usize, usize)> {
    doc.get("clips")?.as_array()?.iter().enumerate().find_map(|(c, clip)| {
        let layers = clip.get("layers")?.as_array()?;
        let l = layers.iter().position(|l| l.get("id").and_then(Value::as_str) == Some(id))?;
        Some((c, l))
    })
}

fn clip_mut<'a>(doc: &'a mut Value, id: &str) -> Result<&'a mut Map<String, Value>, String> {
    let c = find_clip(doc, id).ok_or_else(|| format!("there is no clip {id:?} any more"))?;
    clips_mut(doc)?[c].as_object_mut().ok_or_else(|| format!("clip {id:?} is not an object"))
}

fn layers_mut(doc: &mut Value, clip: usize) -> Result<&mut Vec<Value>, String> {
    let clip = clips_mut(doc)?[clip].as_object_mut().ok_or("the clip is not an object")?;
    clip.entry("layers")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| "the clip's layers are not a list".into())
}

fn layer_mut<'a>(doc: &'a mut Value, id: &str) -> Result<&'a mut Map<String, Value>, String> {
    let (c, l) = find_layer(doc, id).ok_or_else(|| format!("there is no layer {id:?} any more"))?;
    layers_mut(doc, c)?[l].as_object_mut().ok_or_else(|| format!("layer {id:?} is not an object"))
}

/// An id starting with `stem` that `taken` does not hold.
fn fresh_id(stem: &str, taken: impl Fn(&str) -> bool) -> String {
    (1..).map(|n| format!("{stem}-{n}")).find(|id| !taken(id)).expect("some number is free")
}

fn canvas_size(doc: &Value) -> (f64, f64) {
    let side =
        |name: &str, fallback: f64| get(doc, &format!("canvas.{name}")).and_then(Value::as_f64).unwrap_or(fallback);
    (side("width", 1280.0), side("height", 720.0))
}

/// A new layer of `kind` for a canvas of `doc`'s size, with `source` for media kinds.
fn new_layer(doc: &Value, kind: &str, id: String, source: Value) -> Value {
    let (w, h) = canvas_size(doc);
    let middle = json!({ "x": number((w * 0.1).round()), "y": number((h * 0.3).round()),
                         "width": number((w * 0.8).round()), "height": number((h * 0.4).round()) });
    let mut layer = match kind {
        "image" | "video" | "sound" | "lottie" => json!({ "source": source }),
        "shape" => json!({ "color": "#ffffff80" }),
        "captions" => json!({
            "cues": [{ "start": 0.0, "end": 2.0, "text": "Captions" }],
            "font": { "family": "Liberation Sans", "size": number((h / 14.0).round().max(1.0)) },
            "background": "#000000b3"
        }),
        // Text: its kind is checked when the edit is parsed.
        _ => {
            json!({ "text": "Text", "font": { "family": "Liberation Sans", "size": number((h / 10.0).round().max(1.0)) },
                          "align": "center", "vertical_align": "middle" })
        }
    };
    let object = layer.as_object_mut().expect("an object");
    if kind != "sound" {
        object.extend(middle.as_object().expect("an object").clone());
    }
    object.insert("kind".into(), json!(kind));
    object.insert("id".into(), json!(id));
    layer
}

fn new_animation(kind: &str) -> Value {
    match kind {
        "slide_in" | "slide_out" => json!({ "kind": kind, "duration": 0.5, "direction": "left" }),
        "scale" => json!({ "kind": kind, "from": 1, "to": 1.2 }),
        "ken_burns" => json!({ "kind": kind, "from": { "x": 0, "y": 0, "width": 1, "height": 1 },
                                "to": { "x": 0.1, "y": 0.1, "width": 0.8, "height": 0.8 } }),
        // Fades in and out (kinds are checked when the edit is parsed).
        _ => json!({ "kind": kind, "duration": 0.5 }),
    }
}

/// Seconds rounded to the millisecond.
fn seconds(x: f64) -> Value {
    number((x * 1000.0).round() / 1000.0)
}

/// One edit of the document, as the panel, the timeline and the buttons send it: a form's
/// `op` and the fields that name what it changes. The panel's edits (`template`, `clip`,
/// `layer`) also carry the fields they set, which [`apply`] reads from the form by the
/// field table.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// The template's own fields and its tags.
    Template,
    /// A clip's fields and its transition.
    Clip(String),
    /// A layer's fields, its variable and its animations' fields.
    Layer(String),
    /// When a layer shows, in seconds of its clip (the timeline).
    Time {
        layer: String,
        start: f64,
        end: f64,
    },
    ClipDuration {
        clip: String,
        duration: f64,
    },
    /// A new clip after this one (at the end without).
    AddClip {
        after: Option<String>,
    },
    RemoveClip(String),
    MoveClip {
        clip: String,
        step: Step,
    },
    /// A new layer of a kind the format names, on top of a clip's.
    AddLayer {
        clip: String,
        kind: &'static str,
    },
    RemoveLayer(String),
    MoveLayer {
        layer: String,
        step: Step,
    },
    /// A new animation of a kind the format names.
    AddAnimation {
        layer: String,
        kind: &'static str,
    },
    RemoveAnimation {
        layer: String,
        index: usize,
    },
    /// The whole document as typed.
    Json(String),
}

/// Which way a clip or layer moves among its siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Back,
    Forward,
}

impl Edit {
    /// The edit `op` with what `form` names; the message says what is missing or unknown.
    pub fn parse(op: &str, form: &Form) -> Result<Edit, String> {
        let target = |name: &str| form.get(name).map(str::to_string).ok_or_else(|| format!("{name} is missing"));
        let step = || if form.get("step") == Some("-1") { Step::Back } else { Step::Forward };
        let kind = |of: &'static [&'static str], what: &str| {
            let kind = target("kind")?;
            of.iter().copied().find(|k| *k == kind).ok_or_else(|| format!("{kind:?} is not a kind of {what}"))
        };
        Ok(match op {
            "template" => Edit::Template,
            "clip" => Edit::Clip(target("clip")?),
            "layer" => Edit::Layer(target("layer")?),
            "time" => Edit::Time { layer: target("layer")?, start: form.number("start")?, end: form.number("end")? },
            "clip_duration" => Edit::ClipDuration { clip: target("clip")?, duration: form.number("duration")? },
            "add_clip" => Edit::AddClip { after: form.get("clip").map(str::to_string) },
            "remove_clip" => Edit::RemoveClip(target("clip")?),
            "move_clip" => Edit::MoveClip { clip: target("clip")?, step: step() },
            "add_layer" => Edit::AddLayer { clip: target("clip")?, kind: kind(layer_kinds(), "layer")? },
            "remove_layer" => Edit::RemoveLayer(target("layer")?),
            "move_layer" => Edit::MoveLayer { layer: target("layer")?, step: step() },
            "add_animation" => {
                Edit::AddAnimation { layer: target("layer")?, kind: kind(animation_kinds(), "animation")? }
            }
            "remove_animation" => Edit::RemoveAnimation {
                layer: target("layer")?,
                index: target("index")?.parse().map_err(|_| "index must be a number")?,
            },
            "json" => Edit::Json(target("document")?),
            other => return Err(format!("{other:?} is not an edit the studio knows")),
        })
    }
}

/// Applies `edit` to `doc`, the panel's fields from `form`; the selection after it. A
/// media layer it adds starts with `new_source`. The message of an error says what could
/// not be done (the document is then unchanged).
pub fn apply(
    doc: &mut Value,
    edit: &Edit,
    form: &Form,
    selected: Selection,
    new_source: &Value,
) -> Result<Selection, String> {
    let mut next = doc.clone();
    let selection = match edit {
        Edit::Template => {
            let object = next.as_object_mut().ok_or("the document is not an object")?;
            set_fields(object, TEMPLATE_FIELDS, form, "");
            if let Some(tags) = form.get("tags") {
                let tags: Vec<&str> = tags.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
                put(object, "tags", (!tags.is_empty()).then(|| json!(tags)));
            }
            selected
        }
        Edit::Clip(id) => {
            let clip = clip_mut(&mut next, id)?;
            set_fields(clip, CLIP_FIELDS, form, "");
            match form.get("transition.kind") {
                None => {}
                Some("cut") => {
                    clip.remove("transition");
                }
                Some(kind) => {
                    let old = clip.get("transition").filter(|t| t.is_object()).cloned().unwrap_or_else(|| json!({}));
                    let mut transition = json!({ "kind": kind });
                    let object = transition.as_object_mut().expect("an object");
                    object.insert("duration".into(), old.get("duration").cloned().unwrap_or(json!(0.5)));
                    if matches!(kind, "wipe" | "slide") {
                        object.insert("direction".into(), old.get("direction").cloned().unwrap_or(json!("left")));
                    }
                    if let (true, Some(color)) = (kind == "fade_color", old.get("color")) {
                        object.insert("color".into(), color.clone());
                    }
                    clip.insert("transition".into(), transition);
                    set_fields(clip, transition_fields(kind), form, "");
                }
            }
            Selection::Clip(clip.get("id").and_then(Value::as_str).unwrap_or_default().to_string())
        }
        Edit::Layer(id) => {
            let layer = layer_mut(&mut next, id)?;
            let kind = layer.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            set_fields(layer, &layer_fields(&kind), form, "");
            if kind != "shape" && form.0.iter().any(|(k, v)| k == "checkboxes" && v == "variable") {
                set_variable(layer, form);
            }
            if let Some(animations) = layer.get_mut("animations").and_then(Value::as_array_mut) {
                for (i, animation) in animations.iter_mut().enumerate() {
                    let Some(animation) = animation.as_object_mut() else { continue };
                    let kind = animation.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
                    set_fields(animation, animation_fields(&kind), form, &format!("animations[{i}]."));
                }
            }
            Selection::Layer(layer.get("id").and_then(Value::as_str).unwrap_or_default().to_string())
        }
        Edit::Time { layer: id, start, end } => {
            let (c, _) = find_layer(&next, id).ok_or_else(|| format!("there is no layer {id:?} any more"))?;
            let clip_duration = next["clips"][c].get("duration").and_then(Value::as_f64).unwrap_or(f64::INFINITY);
            let layer = layer_mut(&mut next, id)?;
            put(layer, "start", (*start > 0.0).then(|| seconds(*start)));
            put(layer, "end", (*end < clip_duration - 0.0005).then(|| seconds(*end)));
            Selection::Layer(id.clone())
        }
        Edit::ClipDuration { clip, duration } => {
            clip_mut(&mut next, clip)?.insert("duration".into(), seconds(*duration));
            Selection::Clip(clip.clone())
        }
        Edit::AddClip { after } => {
            let id = fresh_id("scene", |id| find_clip(&next, id).is_some());
            let after = after.as_deref().and_then(|c| find_clip(&next, c));
            let clips = clips_mut(&mut next)?;
            let at = after.map_or(clips.len(), |c| c + 1);
            clips.insert(at, json!({ "id": id, "duration": 3, "layers": [] }));
            Selection::Clip(id)
        }
        Edit::RemoveClip(id) => {
            let c = find_clip(&next, id).ok_or("there is no such clip any more")?;
            clips_mut(&mut next)?.remove(c);
            Selection::Template
        }
        Edit::MoveClip { clip: id, step } => {
            let c = find_clip(&next, id).ok_or("there is no such clip any more")?;
            let clips = clips_mut(&mut next)?;
            let to = step_to(c, *step, clips.len());
            clips.swap(c, to);
            Selection::Clip(id.clone())
        }
        Edit::AddLayer { clip, kind } => {
            let c = find_clip(&next, clip).ok_or("there is no such clip any more")?;
            let id = fresh_id(kind, |id| find_layer(&next, id).is_some());
            let layer = new_layer(&next, kind, id.clone(), new_source.clone());
            layers_mut(&mut next, c)?.push(layer);
            Selection::Layer(id)
        }
        Edit::RemoveLayer(id) => {
            let (c, l) = find_layer(&next, id).ok_or("there is no such layer any more")?;
            let clip = next["clips"][c].get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            layers_mut(&mut next, c)?.remove(l);
            Selection::Clip(clip)
        }
        Edit::MoveLayer { layer: id, step } => {
            let (c, l) = find_layer(&next, id).ok_or("there is no such layer any more")?;
            let layers = layers_mut(&mut next, c)?;
            let to = step_to(l, *step, layers.len());
            layers.swap(l, to);
            Selection::Layer(id.clone())
        }
        Edit::AddAnimation { layer: id, kind } => {
            let layer = layer_mut(&mut next, id)?;
            let animations = layer.entry("animations").or_insert_with(|| json!([]));
            animations.as_array_mut().ok_or("the layer's animations are not a list")?.push(new_animation(kind));
            Selection::Layer(id.clone())
        }
        Edit::RemoveAnimation { layer: id, index } => {
            let layer = layer_mut(&mut next, id)?;
            let animations = layer.get_mut("animations").and_then(Value::as_array_mut).ok_or("no animations")?;
            if *index >= animations.len() {
                return Err("there is no such animation any more".into());
            }
            animations.remove(*index);
            if animations.is_empty() {
                layer.remove("animations");
            }
            Selection::Layer(id.clone())
        }
        Edit::Json(text) => {
            next = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
            if !next.is_object() {
                return Err("the document must be a JSON object".into());
            }
            selected
        }
    };
    *doc = next;
    Ok(selection)
}

/// The index `from` moves to by `step`, kept within `len`.
fn step_to(from: usize, step: Step, len: usize) -> usize {
    match step {
        Step::Back => from.saturating_sub(1),
        Step::Forward => (from + 1).min(len.saturating_sub(1)),
    }
}

/// The "make variable" switch: on, the layer gets a variable (a new id, the name and
/// weight sent); off, it has none.
fn set_variable(layer: &mut Map<String, Value>, form: &Form) {
    if form.get("variable").is_none() {
        layer.remove("variable");
        return;
    }
    let old = layer.get("variable").filter(|v| v.is_object()).cloned().unwrap_or_else(|| json!({}));
    let id = old.get("id").cloned().unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()));
    let name = match form.get("variable.name").map(str::trim) {
        Some(name) if !name.is_empty() => json!(name),
        _ => old.get("name").cloned().unwrap_or_else(|| layer.get("id").cloned().unwrap_or(json!("Variable"))),
    };
    let mut variable = json!({ "id": id, "name": name });
    let weight = form.get("variable.weight").map(str::trim).filter(|w| !w.is_empty());
    match weight.map(|w| w.parse::<f64>().ok().filter(|w| w.is_finite())) {
        Some(Some(w)) if w != 0.0 => variable["weight"] = number(w),
        Some(Some(_)) => {}
        // Kept as typed: the document's shape check names the field.
        Some(None) => variable["weight"] = json!(weight),
        None => {
            if let Some(w) = old.get("weight") {
                variable["weight"] = w.clone();
            }
        }
    }
    layer.insert("variable".into(), variable);
}

#[cfg(test)]
mod tests;
