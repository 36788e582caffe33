//! The studio's edits: fields typed and defaults left out, variables, the timeline, structure.

use super::*;

fn form(fields: &[(&str, &str)]) -> Form {
    Form(fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn starter() -> Value {
    json!({
        "version": 1, "name": "T", "canvas": { "width": 640, "height": 360, "fps": 25 },
        "clips": [{ "id": "a", "duration": 4, "layers": [
            { "id": "title", "kind": "text", "x": 0, "y": 0, "width": 640, "height": 100,
              "text": "Hi", "font": { "family": "Liberation Sans", "size": 40 } }
        ] }]
    })
}

/// The edit `op` of `form` parsed and applied.
fn apply_op(doc: &mut Value, op: &str, form: &Form, selected: Selection, source: &Value) -> Result<Selection, String> {
    apply(doc, &Edit::parse(op, form)?, form, selected, source)
}

fn edit(doc: &mut Value, op: &str, fields: &[(&str, &str)]) -> Selection {
    apply_op(doc, op, &form(fields), Selection::Template, &json!({ "url": "" })).unwrap()
}

#[test]
fn layer_fields_are_typed_and_defaults_left_out() {
    let mut doc = starter();
    let chosen = edit(
        &mut doc,
        "layer",
        &[
            ("layer", "title"),
            ("id", "headline"),
            ("font.size", "72"),
            ("font.color", "#ffffff"),
            ("opacity", "0.5"),
            ("x", "ten"),
            ("align", "center"),
            ("end", ""),
            ("checkboxes", "multiline"),
        ],
    );
    assert_eq!(chosen, Selection::Layer("headline".into()));
    let layer = &doc["clips"][0]["layers"][0];
    assert_eq!(layer["font"], json!({ "family": "Liberation Sans", "size": 72 }), "the default colour is left out");
    assert_eq!((&layer["opacity"], &layer["x"], &layer["align"]), (&json!(0.5), &json!("ten"), &json!("center")));
    assert_eq!(layer["multiline"], json!(false), "an unsent listed checkbox is off");
    assert!(layer.get("end").is_none());
}

#[test]
fn the_variable_switch_makes_and_removes_a_variable() {
    let mut doc = starter();
    edit(
        &mut doc,
        "layer",
        &[("layer", "title"), ("checkboxes", "variable"), ("variable", "on"), ("variable.name", "Headline")],
    );
    let variable = doc["clips"][0]["layers"][0]["variable"].clone();
    assert_eq!(variable["name"], "Headline");
    let id = variable["id"].as_str().unwrap().to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    edit(
        &mut doc,
        "layer",
        &[("layer", "title"), ("checkboxes", "variable"), ("variable", "on"), ("variable.weight", "2")],
    );
    assert_eq!(
        doc["clips"][0]["layers"][0]["variable"],
        json!({ "id": id, "name": "Headline", "weight": 2 }),
        "the id stays"
    );
    edit(&mut doc, "layer", &[("layer", "title"), ("checkboxes", "variable")]);
    assert!(doc["clips"][0]["layers"][0].get("variable").is_none());
}

#[test]
fn the_timeline_moves_and_trims_layers_and_clips() {
    let mut doc = starter();
    edit(&mut doc, "time", &[("layer", "title"), ("start", "1.2504"), ("end", "3")]);
    assert_eq!(
        (&doc["clips"][0]["layers"][0]["start"], &doc["clips"][0]["layers"][0]["end"]),
        (&json!(1.25), &json!(3))
    );
    edit(&mut doc, "time", &[("layer", "title"), ("start", "0"), ("end", "4")]);
    assert!(doc["clips"][0]["layers"][0].get("start").is_none() && doc["clips"][0]["layers"][0].get("end").is_none());
    edit(&mut doc, "clip_duration", &[("clip", "a"), ("duration", "2.5")]);
    assert_eq!(doc["clips"][0]["duration"], json!(2.5));
}

#[test]
fn clips_layers_transitions_and_animations_are_added_moved_and_removed() {
    let mut doc = starter();
    assert_eq!(edit(&mut doc, "add_clip", &[("clip", "a")]), Selection::Clip("scene-1".into()));
    edit(&mut doc, "clip", &[("clip", "a"), ("transition.kind", "wipe"), ("transition.duration", "0.75")]);
    assert_eq!(doc["clips"][0]["transition"], json!({ "kind": "wipe", "duration": 0.75, "direction": "left" }));
    edit(&mut doc, "move_clip", &[("clip", "scene-1"), ("step", "-1")]);
    assert_eq!(doc["clips"][0]["id"], "scene-1");
    assert_eq!(edit(&mut doc, "add_layer", &[("clip", "a"), ("kind", "image")]), Selection::Layer("image-1".into()));
    let image = &doc["clips"][1]["layers"][1];
    assert_eq!(
        (&image["kind"], &image["source"], &image["width"]),
        (&json!("image"), &json!({ "url": "" }), &json!(512))
    );
    edit(&mut doc, "layer", &[("layer", "image-1"), ("source", "url"), ("source_url", " https://example.test/a.png ")]);
    assert_eq!(doc["clips"][1]["layers"][1]["source"], json!({ "url": "https://example.test/a.png" }));
    edit(&mut doc, "move_layer", &[("layer", "image-1"), ("step", "-1")]);
    assert_eq!(doc["clips"][1]["layers"][0]["id"], "image-1", "moved below the title");
    edit(&mut doc, "add_animation", &[("layer", "title"), ("kind", "slide_in")]);
    edit(
        &mut doc,
        "layer",
        &[("layer", "title"), ("animations[0].direction", "up"), ("animations[0].easing", "linear")],
    );
    assert_eq!(
        doc["clips"][1]["layers"][1]["animations"],
        json!([{ "kind": "slide_in", "duration": 0.5, "direction": "up" }])
    );
    edit(&mut doc, "remove_animation", &[("layer", "title"), ("index", "0")]);
    assert!(doc["clips"][1]["layers"][1].get("animations").is_none());
    assert_eq!(edit(&mut doc, "remove_layer", &[("layer", "title")]), Selection::Clip("a".into()));
    edit(&mut doc, "remove_clip", &[("clip", "scene-1")]);
    assert_eq!(doc["clips"].as_array().unwrap().len(), 1);
}

#[test]
fn a_captions_layer_is_added_valid_and_styled_in_the_panel() {
    let mut doc = starter();
    let added = edit(&mut doc, "add_layer", &[("clip", "a"), ("kind", "captions")]);
    assert_eq!(added, Selection::Layer("captions-1".into()));
    reelfarm_domain::template::Template::from_json(doc.to_string()).expect("a valid template");
    let form =
        [("layer", "captions-1"), ("highlight", "#ffd23f"), ("max_lines", "3"), ("font.family", "Liberation Serif")];
    edit(&mut doc, "layer", &form);
    let layer = &doc["clips"][0]["layers"][1];
    assert_eq!((&layer["highlight"], &layer["max_lines"]), (&json!("#ffd23f"), &json!(3)));
    assert_eq!(layer["cues"], json!([{ "start": 0.0, "end": 2.0, "text": "Captions" }]));
    reelfarm_domain::template::Template::from_json(doc.to_string()).expect("still valid");
}

#[test]
fn a_lottie_layer_is_added_with_the_first_library_animation_and_edited() {
    let mut doc = starter();
    let first = json!({ "asset": "0b3f6c1e-2d4a-4e5f-8a9b-1c2d3e4f5a6b" });
    let added =
        apply_op(&mut doc, "add_layer", &form(&[("clip", "a"), ("kind", "lottie")]), Selection::Template, &first);
    assert_eq!(added, Ok(Selection::Layer("lottie-1".into())));
    edit(&mut doc, "layer", &[("layer", "lottie-1"), ("speed", "2"), ("loop", "true"), ("fit", "cover")]);
    let layer = &doc["clips"][0]["layers"][1];
    assert_eq!((&layer["source"], &layer["speed"], &layer["loop"]), (&first, &json!(2), &json!(true)));
    reelfarm_domain::template::Template::from_json(doc.to_string()).expect("a valid template");
}

#[test]
fn a_failed_edit_changes_nothing() {
    let mut doc = starter();
    let before = doc.clone();
    for (op, fields) in [
        ("json", vec![("document", "{ not json")]),
        ("json", vec![("document", "[1]")]),
        ("layer", vec![("layer", "gone")]),
        ("add_layer", vec![("clip", "a"), ("kind", "hologram")]),
        ("time", vec![("layer", "title"), ("start", "soon"), ("end", "4")]),
        ("explode", vec![]),
    ] {
        let result = apply_op(&mut doc, op, &form(&fields), Selection::Template, &Value::Null);
        assert!(result.is_err(), "{op}: {result:?}");
        assert_eq!(doc, before, "{op}");
    }
}

#[test]
fn the_template_fields_and_tags() {
    let mut doc = starter();
    edit(
        &mut doc,
        "template",
        &[("name", "Promo"), ("canvas.fps", "30"), ("canvas.background", "#000000"), ("tags", "a, b,,")],
    );
    assert_eq!((&doc["name"], &doc["canvas"]["fps"], &doc["tags"]), (&json!("Promo"), &json!(30), &json!(["a", "b"])));
    assert!(doc["canvas"].get("background").is_none());
}
