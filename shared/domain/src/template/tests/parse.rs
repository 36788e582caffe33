//! Reading: the example, defaults, round trip, and shape errors with their JSON paths.

use serde_json::json;

use super::*;
use crate::template::color::Color;
use crate::template::{Content, Fit, Source, TextFit, Transition};

#[test]
fn the_example_parses_with_defaults_filled_in() {
    let t = example();
    assert_eq!(t.name, "Product launch");
    assert_eq!(t.canvas.background, Color::rgb(0x10, 0x18, 0x20));
    assert_eq!(t.clips.len(), 3);
    assert_eq!(t.clips[2].transition, Transition::Cut);
    let soundtrack = t.soundtrack.as_ref().unwrap();
    assert!(soundtrack.loop_, "a soundtrack loops by default");
    let Content::Text(title) = &t.clips[0].layers[2].content else { panic!("title is a text layer") };
    assert_eq!((title.line_height, title.fit, title.multiline), (1.2, TextFit::Shrink, false));
    let Content::Text(points) = &t.clips[1].layers[1].content else { panic!("points is a text layer") };
    assert_eq!((points.font.color, points.minimum_length, points.frame.opacity), (Color::WHITE, 0, 1.0));
    let Content::Image(logo) = &t.clips[2].layers[1].content else { panic!("logo is an image layer") };
    assert_eq!(logo.fit, Fit::Contain);
    assert_eq!(logo.source, Source::Asset { asset: "0190f6a2-7b3c-7d4e-8f50-61a2b3c4d5e6".into() });
    let Content::Video(footage) = &t.clips[1].layers[0].content else { panic!("footage is a video layer") };
    assert_eq!((footage.loop_, footage.mute, footage.volume, footage.frame.opacity), (true, true, 1.0, 0.8));
}

#[test]
fn a_serialised_template_reads_back_equal() {
    let t = example();
    let json = serde_json::to_vec(&t).unwrap();
    assert_eq!(Template::from_json(json).unwrap(), t);
}

#[test]
fn the_complete_example_of_the_documentation_is_the_test_example() {
    let docs = include_str!("../../../../../docs/templates.md");
    let start = docs.find("## Complete example").expect("docs/templates.md has a complete example");
    let block = &docs[start..];
    let block = &block[block.find("```json\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    assert_eq!(Template::from_json(block).unwrap(), example());
}

#[test]
fn a_wrong_type_is_reported_with_its_json_path() {
    let e = malformed(|v| layer(v, 1, 1)["font"]["size"] = json!("big"));
    assert_eq!(e.path, "clips[1].layers[1].font.size");
    assert!(e.message.starts_with("invalid type: string \"big\", expected f64"), "{e}");
    let e = malformed(|v| v["canvas"]["background"] = json!("navy"));
    assert_eq!(e.path, "canvas.background");
    assert!(e.message.contains("invalid colour \"navy\""), "{e}");
}

#[test]
fn unknown_fields_are_refused_with_their_path() {
    let e = malformed(|v| v["canvas"]["frame_rate"] = json!(25));
    assert_eq!(e.path, "canvas.frame_rate");
    assert!(e.message.starts_with("unknown field `frame_rate`"), "{e}");
    let e = malformed(|v| layer(v, 0, 2)["colour"] = json!("#fff"));
    assert_eq!(e.path, "clips[0].layers[2].colour");
    assert!(e.message.starts_with("unknown field `colour`"), "{e}");
    let e = malformed(|v| layer(v, 0, 2)["font"]["weight"] = json!("bold"));
    assert_eq!(e.path, "clips[0].layers[2].font.weight");
    let e = malformed(|v| v["clips"][0]["transition"]["easing"] = json!("linear"));
    assert_eq!(e.path, "clips[0].transition");
    assert!(e.message.contains("unknown field `easing`"), "{e}");
}

#[test]
fn a_field_of_another_layer_kind_is_refused_naming_the_layer() {
    let e = malformed(|v| layer(v, 0, 1)["font"] = json!({"family": "Liberation Sans", "size": 10}));
    assert_eq!(e.path, "clips[0].layers[1]");
    assert_eq!(e.message, "layer \"photo\": field `font` does not apply to an image layer");
    let e = malformed(|v| layer(v, 2, 2)["x"] = json!(1));
    assert_eq!(e.message, "layer \"voice\": field `x` does not apply to a sound layer");
}

#[test]
fn a_missing_field_of_the_kind_is_reported_naming_the_layer() {
    let e = malformed(|v| {
        layer(v, 0, 2).as_object_mut().unwrap().remove("font");
    });
    assert_eq!(e.path, "clips[0].layers[2]");
    assert_eq!(e.message, "layer \"title\": missing field `font` (required on text layers)");
    let e = malformed(|v| {
        layer(v, 0, 0).as_object_mut().unwrap().remove("width");
    });
    assert_eq!(e.message, "layer \"backdrop\": missing field `width` (required on shape layers)");
}

#[test]
fn fit_must_suit_the_layer_kind() {
    let e = malformed(|v| layer(v, 0, 2)["fit"] = json!("cover"));
    assert_eq!(e.message, "layer \"title\": fit `cover` does not apply to a text layer; use `fixed` or `shrink`");
    let e = malformed(|v| layer(v, 0, 1)["fit"] = json!("shrink"));
    assert!(e.message.contains("use `cover`, `contain` or `fill`"), "{e}");
}

#[test]
fn a_source_has_exactly_one_kind() {
    let e = malformed(|v| layer(v, 0, 1)["source"] = json!({"file": "a.png", "url": "https://x.test/a.png"}));
    assert_eq!(e.path, "clips[0].layers[1].source");
    assert_eq!(e.message, "a source has exactly one of `asset`, `url` or `file`");
    let e = malformed(|v| layer(v, 0, 1)["source"] = json!({"path": "a.png"}));
    assert!(e.message.starts_with("unknown field `path`"), "{e}");
}

#[test]
fn an_unknown_layer_kind_is_refused() {
    let e = malformed(|v| layer(v, 0, 0)["kind"] = json!("hologram"));
    assert_eq!(e.path, "clips[0].layers[0].kind");
    assert!(e.message.starts_with("unknown variant `hologram`"), "{e}");
}

#[test]
fn another_format_version_is_refused_before_its_fields() {
    let e = malformed(|v| {
        v["version"] = json!(2);
        v["clips"] = json!("a different shape");
    });
    assert_eq!(e.path, "version");
    assert_eq!(e.message, "unsupported template version 2; this reelfarm reads version 1");
}

#[test]
fn bytes_that_are_not_json_are_refused_with_the_position() {
    let e = Template::from_json("{\"version\": 1,").unwrap_err();
    assert_eq!(e.key(), "error.template_not_json");
    assert!(e.to_string().contains("line 1"), "{e}");
}

#[test]
fn the_error_lists_every_problem_one_per_line() {
    let e = read(|v| {
        v["canvas"]["fps"] = json!(120);
        layer(v, 0, 2)["font"]["family"] = json!("Comic Sans");
    })
    .unwrap_err();
    assert_eq!(e.key(), "error.template_invalid");
    assert_eq!(e.errors().len(), 2);
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "canvas.fps: canvas fps must be from 1 to 60, got 120");
    assert!(
        lines[1].starts_with("clips[0].layers[2].font.family: layer \"title\": font family \"Comic Sans\""),
        "{text}"
    );
    assert_eq!(lines.len(), 2);
}
