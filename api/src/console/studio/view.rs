//! What the studio shows of a working copy beside its timeline ([`super::timeline`]): the
//! panel of the selected template, clip or layer, and the document as JSON — each with the
//! document's problems at their place (by their JSON path).

use reelfarm_domain::template::{names, Template};
use serde_json::Value;

use super::edit::{self, find_clip, find_layer, Selection};
use super::fields::{
    animation_fields, layer_fields, layer_kinds, transition_fields, Field, Group, Kind, Unset, CLIP_FIELDS,
    TEMPLATE_FIELDS, TRANSITIONS,
};

/// Problems of the document: a JSON path (`clips[0].layers[1].x`, `""` for the whole) and
/// what is wrong there.
pub type Problems = [(String, String)];

/// Whether `path` is `at` or inside it.
pub(super) fn under(path: &str, at: &str) -> bool {
    at.is_empty()
        || path == at
        || path.strip_prefix(at).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// The path one step up from `path` (`""` above the top).
fn parent(path: &str) -> &str {
    match path.rfind(['.', '[']) {
        Some(at) => &path[..at],
        None => "",
    }
}

pub(super) fn num(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64).filter(|n| n.is_finite())
}

pub(super) fn text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

pub struct Opt {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// One input of the panel.
pub struct FieldView {
    /// The form field's name (the path below the edited object).
    pub name: String,
    /// The element id.
    pub id: String,
    pub label: &'static str,
    /// `number`, `text`, `textarea`, `color`, `checkbox`, `select` or `source`.
    pub input: &'static str,
    pub value: String,
    pub checked: bool,
    pub step: &'static str,
    pub options: Vec<Opt>,
    /// A source's address (`url` sources).
    pub url: String,
    pub problem: Option<String>,
}

pub struct VariableView {
    pub on: bool,
    pub name: String,
    pub weight: String,
    pub name_problem: Option<String>,
    /// What `GET …/templates/{id}` returns for it (once the document is valid).
    pub requirements: Option<String>,
    pub fields: Vec<FieldView>,
}

pub struct AnimationView {
    pub index: usize,
    pub kind: String,
    pub fields: Vec<FieldView>,
    pub problem: Option<String>,
}

pub struct FieldGroup {
    pub legend: &'static str,
    pub fields: Vec<FieldView>,
}

/// The property panel of the selection.
pub struct Panel {
    pub title: String,
    /// The edit its form sends: `template`, `clip` or `layer`.
    pub op: &'static str,
    /// The edited clip or layer (its id as the document has it).
    pub target: String,
    pub groups: Vec<FieldGroup>,
    pub variable: Option<VariableView>,
    pub animations: Vec<AnimationView>,
    /// The clip of the selected layer, or the selected clip.
    pub clip: String,
    /// Checkbox fields of the form (unsent means off).
    pub checkboxes: Vec<String>,
    /// Problems of the object that no input shows.
    pub problems: Vec<String>,
    /// The template's tags, comma between (its panel only).
    pub tags: String,
}

/// Library files a source may name: id and label.
pub type Choices = [(String, String)];

/// The document's problems while the panel is built: each is shown once, at the first
/// input (or place) under its path; the rest are listed at the panel's top.
struct Placing<'a> {
    problems: &'a Problems,
    choices: &'a Choices,
    placed: Vec<String>,
}

impl Placing<'_> {
    /// The first problem at or under `path` not shown yet, now shown.
    fn take(&mut self, path: &str) -> Option<String> {
        let (p, message) = self.problems.iter().find(|(p, _)| under(p, path) && !self.placed.contains(p))?;
        self.placed.push(p.clone());
        Some(message.clone())
    }

    /// The inputs of `fields` of the object at `path` in `object` (form names with `prefix`).
    fn inputs(&mut self, fields: &[Field], object: &Value, path: &str, prefix: &str) -> Vec<FieldView> {
        fields.iter().map(|f| self.input(f, object, path, prefix)).collect()
    }

    fn input(&mut self, field: &Field, object: &Value, path: &str, prefix: &str) -> FieldView {
        let full = if path.is_empty() { field.path.to_string() } else { format!("{path}.{}", field.path) };
        input(field, object, prefix, self.take(&full), self.choices)
    }
}

fn input(field: &Field, object: &Value, prefix: &str, problem: Option<String>, choices: &Choices) -> FieldView {
    let current = edit::get(object, field.path);
    let default = match field.default {
        Unset::Is(json) => serde_json::from_str(json).ok(),
        _ => None,
    };
    let shown = current.cloned().or(default);
    let name = format!("{prefix}{}", field.path);
    let options = |words: &[&str]| {
        let value = text(shown.as_ref());
        let mut options: Vec<Opt> = words
            .iter()
            .map(|w| Opt { value: w.to_string(), label: w.replace('_', " "), selected: value == *w })
            .collect();
        if !value.is_empty() && !words.contains(&value.as_str()) {
            options.insert(0, Opt { label: format!("{value} (not available)"), value, selected: true });
        }
        options
    };
    let (input, options, url) = match field.kind {
        Kind::Number => ("number", Vec::new(), String::new()),
        Kind::Integer => ("integer", Vec::new(), String::new()),
        Kind::Text => ("text", Vec::new(), String::new()),
        Kind::LongText => ("textarea", Vec::new(), String::new()),
        Kind::Color => {
            let plain = text(shown.as_ref());
            let is_plain = plain.len() == 7 && plain.starts_with('#');
            (if is_plain || plain.is_empty() { "color" } else { "text" }, Vec::new(), String::new())
        }
        Kind::Bool => ("checkbox", Vec::new(), String::new()),
        Kind::Choice(definition) => ("select", options(names(definition)), String::new()),
        Kind::Font => ("select", options(crate::services::templates::fonts()), String::new()),
        Kind::Source => source_options(shown.as_ref(), choices),
    };
    FieldView {
        id: format!("f-{}", name.replace(['.', '[', ']'], "-")),
        name,
        label: field.label,
        input,
        value: match field.kind {
            Kind::Color if shown.is_none() => "#ffffff".into(),
            _ => text(shown.as_ref()),
        },
        checked: shown.as_ref().and_then(Value::as_bool).unwrap_or(false),
        step: if field.kind == Kind::Integer { "1" } else { "any" },
        options,
        url,
        problem,
    }
}

fn source_options(source: Option<&Value>, choices: &Choices) -> (&'static str, Vec<Opt>, String) {
    let asset = source.and_then(|s| s.get("asset")).and_then(Value::as_str).map(str::to_string);
    let file = source.and_then(|s| s.get("file")).and_then(Value::as_str);
    let url = source.and_then(|s| s.get("url")).and_then(Value::as_str).unwrap_or_default().to_string();
    let mut options = vec![Opt {
        value: "url".into(),
        label: "The address below".into(),
        selected: asset.is_none() && file.is_none(),
    }];
    if let Some(file) = file {
        options.push(Opt { value: format!("file:{file}"), label: format!("Stored file {file}"), selected: true });
    }
    let mut listed = false;
    for (id, label) in choices {
        let selected = asset.as_deref() == Some(id.as_str());
        listed |= selected;
        options.push(Opt { value: format!("asset:{id}"), label: format!("Library: {label}"), selected });
    }
    if let (Some(asset), false) = (asset, listed) {
        options.push(Opt { value: format!("asset:{asset}"), label: format!("Asset {asset}"), selected: true });
    }
    ("source", options, url)
}

/// The panel of `selection` in `doc`; `template` is the document read as a template when
/// it is valid (for the variables' requirements).
pub fn panel(
    doc: &Value,
    selection: &Selection,
    template: Option<&Template>,
    problems: &Problems,
    choices: &Choices,
) -> Panel {
    let mut placing = Placing { problems, choices, placed: Vec::new() };
    let mut panel = Panel {
        title: "Template".into(),
        op: "template",
        target: String::new(),
        groups: Vec::new(),
        variable: None,
        animations: Vec::new(),
        clip: String::new(),
        checkboxes: Vec::new(),
        problems: Vec::new(),
        tags: doc
            .get("tags")
            .and_then(Value::as_array)
            .map_or_else(String::new, |tags| tags.iter().map(|t| text(Some(t))).collect::<Vec<_>>().join(", ")),
    };
    let path = match selection {
        Selection::Clip(id) if find_clip(doc, id).is_some() => {
            let c = find_clip(doc, id).expect("found");
            let path = format!("clips[{c}]");
            let clip = &doc["clips"][c];
            let kind = clip.get("transition").and_then(|t| t.get("kind")).and_then(Value::as_str).unwrap_or("cut");
            let choose = Field {
                path: "transition.kind",
                label: "Transition to the next clip",
                kind: Kind::Choice(TRANSITIONS),
                default: Unset::Is("\"cut\""),
                group: Group::Timing,
            };
            let mut fields = placing.inputs(CLIP_FIELDS, clip, &path, "");
            fields.push(placing.input(&choose, clip, &path, ""));
            fields.extend(placing.inputs(transition_fields(kind), clip, &path, ""));
            (panel.title, panel.op, panel.target, panel.clip) = (format!("Clip {id}"), "clip", id.clone(), id.clone());
            panel.groups.push(FieldGroup { legend: "Clip", fields });
            path
        }
        Selection::Layer(id) if find_layer(doc, id).is_some() => {
            let (c, l) = find_layer(doc, id).expect("found");
            let path = format!("clips[{c}].layers[{l}]");
            let layer = &doc["clips"][c]["layers"][l];
            let kind = text(layer.get("kind"));
            let fields = layer_fields(&kind);
            let mut group = |legend: &'static str, which: Group| {
                let chosen: Vec<Field> = fields.iter().filter(|f| f.group == which).copied().collect();
                let views = placing.inputs(&chosen, layer, &path, "");
                (legend, views)
            };
            let content = group("Content", Group::Content);
            let variable_fields = group("Variable", Group::Variable).1;
            let boxed = group("Position and size", Group::Box);
            let timing = group("Timing", Group::Timing);
            for (legend, fields) in [content, boxed, timing] {
                if !fields.is_empty() {
                    panel.groups.push(FieldGroup { legend, fields });
                }
            }
            // Shapes and Lottie animations cannot be variables.
            if !matches!(kind.as_str(), "shape" | "lottie") && layer_kinds().contains(&kind.as_str()) {
                let name_problem = placing.take(&format!("{path}.variable"));
                panel.variable = Some(variable(layer, template, variable_fields, name_problem));
            }
            let animations = layer.get("animations").and_then(Value::as_array).cloned().unwrap_or_default();
            for (i, animation) in animations.iter().enumerate() {
                let at = format!("{path}.animations[{i}]");
                let kind = text(animation.get("kind"));
                let fields = placing.inputs(animation_fields(&kind), animation, &at, &format!("animations[{i}]."));
                let problem = placing.take(&at);
                panel.animations.push(AnimationView { index: i, kind, fields, problem });
            }
            panel.title = format!("Layer {id} ({kind})");
            (panel.op, panel.target) = ("layer", id.clone());
            panel.clip = text(doc["clips"][c].get("id"));
            path
        }
        _ => {
            let fields = placing.inputs(TEMPLATE_FIELDS, doc, "", "");
            panel.groups.push(FieldGroup { legend: "Template", fields });
            String::new()
        }
    };
    panel.checkboxes = panel
        .groups
        .iter()
        .flat_map(|g| &g.fields)
        .chain(panel.variable.iter().flat_map(|v| &v.fields))
        .filter(|f| f.input == "checkbox")
        .map(|f| f.name.clone())
        .chain(panel.variable.as_ref().map(|_| "variable".to_string()))
        .collect();
    panel.problems = problems
        .iter()
        .filter(|(p, _)| !placing.placed.contains(p))
        .filter(|(p, _)| if path.is_empty() { !p.starts_with("clips[") } else { under(p, &path) })
        .map(|(p, m)| if p.is_empty() { m.clone() } else { format!("{p}: {m}") })
        .collect();
    panel
}

fn variable(
    layer: &Value,
    template: Option<&Template>,
    fields: Vec<FieldView>,
    name_problem: Option<String>,
) -> VariableView {
    let variable = layer.get("variable").filter(|v| v.is_object());
    let id = variable.and_then(|v| v.get("id")).and_then(Value::as_str).unwrap_or_default();
    let requirements = template.and_then(|t| {
        let found = t.variables(|_| String::new()).into_iter().find(|v| v.id.to_string() == id)?;
        serde_json::to_string(&found.requirements).ok()
    });
    VariableView {
        on: variable.is_some(),
        name: text(variable.and_then(|v| v.get("name"))),
        weight: text(variable.and_then(|v| v.get("weight"))),
        name_problem,
        requirements,
        fields,
    }
}

/// One line of the document as JSON, with the problems placed on it.
pub struct JsonLine {
    pub text: String,
    pub problems: Vec<String>,
}

/// `doc` as the studio writes it: pretty-printed, in the order of [`FIRST_KEYS`].
pub fn pretty(doc: &Value) -> String {
    let mut lines = Vec::new();
    write(doc, "", 0, String::new(), false, &mut lines);
    lines.into_iter().map(|(text, _)| text).collect::<Vec<_>>().join("\n")
}

/// `doc` pretty-printed, each problem under the line of its path (or of the nearest
/// enclosing one that exists: a missing field's object).
pub fn listing(doc: &Value, problems: &Problems) -> Vec<JsonLine> {
    let mut lines: Vec<(String, Option<String>)> = Vec::new();
    write(doc, "", 0, String::new(), false, &mut lines);
    let mut listed: Vec<JsonLine> =
        lines.iter().map(|(text, _)| JsonLine { text: text.clone(), problems: Vec::new() }).collect();
    for (path, message) in problems {
        let mut at = path.as_str();
        let line = loop {
            if let Some(line) = lines.iter().position(|(_, p)| p.as_deref() == Some(at)) {
                break line;
            }
            if at.is_empty() {
                break 0;
            }
            at = parent(at);
        };
        if let Some(line) = listed.get_mut(line) {
            line.problems.push(if path.is_empty() { message.clone() } else { format!("{path}: {message}") });
        }
    }
    listed
}

/// Keys written first, in this order, as people write templates (the rest follow by name).
const FIRST_KEYS: &[&str] = &[
    "version",
    "name",
    "category",
    "tags",
    "canvas",
    "id",
    "kind",
    "duration",
    "transition",
    "start",
    "end",
    "x",
    "y",
    "width",
    "height",
    "fps",
    "text",
    "font",
    "source",
    "variable",
];

/// Appends the lines of `value` at `path`; each opening or single line carries its path.
fn write(value: &Value, path: &str, depth: usize, key: String, comma: bool, out: &mut Vec<(String, Option<String>)>) {
    let indent = "  ".repeat(depth);
    let end = if comma { "," } else { "" };
    let child = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push((format!("{indent}{key}{{"), Some(path.to_string())));
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            let rank = |k: &str| FIRST_KEYS.iter().position(|f| *f == k).unwrap_or(FIRST_KEYS.len());
            fields.sort_by(|(a, _), (b, _)| (rank(a), a).cmp(&(rank(b), b)));
            for (i, (k, v)) in fields.into_iter().enumerate() {
                let quoted = serde_json::to_string(k).expect("strings serialize");
                write(v, &child(k), depth + 1, format!("{quoted}: "), i + 1 < map.len(), out);
            }
            out.push((format!("{indent}}}{end}"), None));
        }
        Value::Array(items) if !items.is_empty() => {
            out.push((format!("{indent}{key}["), Some(path.to_string())));
            for (i, v) in items.iter().enumerate() {
                write(v, &format!("{path}[{i}]"), depth + 1, String::new(), i + 1 < items.len(), out);
            }
            out.push((format!("{indent}]{end}"), None));
        }
        scalar => out.push((format!("{indent}{key}{scalar}{end}"), Some(path.to_string()))),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A two-clip document with a layer whose font is not installed (the timeline's tests
    /// use it too).
    pub(in crate::console::studio) fn doc() -> Value {
        json!({
            "version": 1, "name": "T", "canvas": { "width": 640, "height": 360, "fps": 25 },
            "clips": [
                { "id": "a", "duration": 4, "transition": { "kind": "crossfade", "duration": 1 }, "layers": [
                    { "id": "bg", "kind": "shape", "x": 0, "y": 0, "width": 640, "height": 360, "color": "#000000" },
                    { "id": "title", "kind": "text", "x": 0, "y": 0, "width": 640, "height": 100, "start": 1, "end": 3,
                      "text": "Hi", "font": { "family": "Comic Sans", "size": 40 } }
                ] },
                { "id": "b", "duration": 5, "layers": [] }
            ]
        })
    }

    #[test]
    fn problems_sit_at_their_field_and_line() {
        let problems = vec![
            ("clips[0].layers[1].font.family".to_string(), "font family \"Comic Sans\" is not available".to_string()),
            ("clips[0].layers[1].width2".to_string(), "unknown field".to_string()),
            ("".to_string(), "broken".to_string()),
        ];
        let panel = panel(&doc(), &Selection::Layer("title".into()), None, &problems, &[]);
        let font = panel.groups.iter().flat_map(|g| &g.fields).find(|f| f.name == "font.family").unwrap();
        assert!(font.problem.as_deref().unwrap().contains("Comic Sans"));
        assert_eq!(font.options[0].label, "Comic Sans (not available)", "never a silent substitute");
        assert_eq!(panel.problems, vec!["clips[0].layers[1].width2: unknown field"]);
        assert!(
            panel.checkboxes.contains(&"multiline".to_string()) && panel.checkboxes.contains(&"variable".to_string())
        );

        let lines = listing(&doc(), &problems);
        let at = |needle: &str| lines.iter().find(|l| l.text.contains(needle)).unwrap();
        assert_eq!(at("\"family\": \"Comic Sans\"").problems.len(), 1);
        assert_eq!(lines[0].problems, vec!["broken"]);
        // A field that is not there is reported on its object's line.
        let title = lines.iter().position(|l| l.text.contains("\"title\"")).unwrap();
        let object = (0..title).rev().find(|i| lines[*i].text.trim() == "{").unwrap();
        assert_eq!(lines[object].problems, vec!["clips[0].layers[1].width2: unknown field"]);
        let reparsed: Value =
            serde_json::from_str(&lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>().join("\n")).unwrap();
        assert_eq!(reparsed, doc(), "the listing is the document");
    }
}
