//! Layer rules: ids, timing, box, text, media, variables and animations.

use serde_json::json;

use super::*;

#[test]
fn layer_ids_are_unique_in_the_template() {
    assert_one_error(
        |v| layer(v, 1, 0)["id"] = json!("title"),
        "clips[1].layers[0].id",
        &["layer \"title\": the id is used by more than one layer"],
    );
    assert_one_error(|v| layer(v, 0, 0)["id"] = json!(""), "clips[0].layers[0].id", &["a layer id must not be empty"]);
}

#[test]
fn a_layer_lies_within_its_clip() {
    assert_one_error(
        |v| layer(v, 0, 0)["start"] = json!(-1),
        "clips[0].layers[0].start",
        &["layer \"backdrop\": start must be 0 or more, got -1"],
    );
    assert_one_error(
        |v| layer(v, 1, 1)["end"] = json!(0),
        "clips[1].layers[1].end",
        &["layer \"points\": end (0 s) must be after start (0 s)"],
    );
    assert_one_error(
        |v| layer(v, 1, 1)["end"] = json!(6),
        "clips[1].layers[1].end",
        &["layer \"points\": end (6 s) is after the end of its clip \"details\" (5 s)"],
    );
    assert_one_error(
        |v| layer(v, 0, 0)["start"] = json!(4),
        "clips[0].layers[0].start",
        &["layer \"backdrop\": start (4 s) must be before the end of its clip \"intro\" (4 s)"],
    );
}

#[test]
fn the_box_has_a_size_and_opacity_is_a_fraction() {
    assert_one_error(
        |v| layer(v, 0, 0)["width"] = json!(0),
        "clips[0].layers[0].width",
        &["layer \"backdrop\": width must be greater than 0, got 0"],
    );
    assert_one_error(
        |v| layer(v, 1, 0)["opacity"] = json!(1.5),
        "clips[1].layers[0].opacity",
        &["layer \"footage\": opacity must be from 0 to 1, got 1.5"],
    );
}

#[test]
fn a_font_we_do_not_have_is_refused_listing_the_ones_we_have() {
    assert_one_error(
        |v| layer(v, 0, 2)["font"]["family"] = json!("Comic Sans"),
        "clips[0].layers[2].font.family",
        &["layer \"title\": font family \"Comic Sans\" is not available; use one of: Liberation Sans, Liberation Serif, Liberation Mono"],
    );
    assert_one_error(
        |v| layer(v, 0, 2)["font"]["size"] = json!(0),
        "clips[0].layers[2].font.size",
        &["layer \"title\": font size must be greater than 0, got 0"],
    );
    assert_one_error(|v| layer(v, 1, 1)["line_height"] = json!(-1), "clips[1].layers[1].line_height", &["line_height"]);
}

#[test]
fn text_markup_must_parse() {
    assert_one_error(
        |v| layer(v, 0, 2)["text"] = json!("New <u>Aero</u>"),
        "clips[0].layers[2].text",
        &["layer \"title\": text is not valid markup at character 4: "],
    );
}

#[test]
fn the_default_text_respects_the_variable_rules() {
    // "New Aero 2": 10 visible characters.
    assert_one_error(
        |v| layer(v, 0, 2)["maximum_length"] = json!(9),
        "clips[0].layers[2].text",
        &["layer \"title\": text has 10 visible characters; at most 9 allowed"],
    );
    assert_one_error(
        |v| layer(v, 0, 2)["minimum_length"] = json!(11),
        "clips[0].layers[2].text",
        &["layer \"title\": text has 10 visible characters; at least 11 required"],
    );
    assert_one_error(
        |v| layer(v, 0, 2)["text"] = json!("New<br/>Aero"),
        "clips[0].layers[2].text",
        &["layer \"title\": text must be a single line (multiline is false)"],
    );
}

#[test]
fn length_limits_are_consistent() {
    let errors = invalid(|v| layer(v, 1, 1)["minimum_length"] = json!(201));
    assert_eq!(errors[0].path, "clips[1].layers[1].minimum_length");
    assert_eq!(errors[0].message, "layer \"points\": minimum_length (201) is greater than maximum_length (200)");
    let errors = invalid(|v| layer(v, 1, 1)["maximum_length"] = json!(0));
    assert_eq!(errors[0].path, "clips[1].layers[1].maximum_length");
    assert_eq!(errors[0].message, "layer \"points\": maximum_length must be at least 1");
}

#[test]
fn shape_layers_cannot_be_variables() {
    assert_one_error(
        |v| layer(v, 0, 0)["variable"] = json!({"id": "11111111-2222-4333-8444-555555555555", "name": "Backdrop"}),
        "clips[0].layers[0].variable",
        &["layer \"backdrop\": a shape layer cannot be a variable"],
    );
}

#[test]
fn variable_ids_are_unique_and_variables_named() {
    assert_one_error(
        |v| layer(v, 1, 0)["variable"]["id"] = json!("5d0c7d1e-3f4a-4b7e-9a53-0c1d2e3f4a5b"),
        "clips[1].layers[0].variable.id",
        &["layer \"footage\": variable id 5d0c7d1e-3f4a-4b7e-9a53-0c1d2e3f4a5b is already used by layer \"photo\""],
    );
    assert_one_error(
        |v| layer(v, 0, 1)["variable"]["name"] = json!(""),
        "clips[0].layers[1].variable.name",
        &["layer \"photo\": the variable needs a name"],
    );
    assert_one_error(
        |v| layer(v, 0, 1)["variable"]["name"] = json!("n".repeat(101)),
        "clips[0].layers[1].variable.name",
        &["layer \"photo\": a variable's name has at most 100 characters"],
    );
    let e = malformed(|v| layer(v, 0, 1)["variable"]["id"] = json!("photo-1"));
    assert_eq!(e.path, "clips[0].layers[1].variable.id");
}

#[test]
fn media_settings_are_checked() {
    assert_one_error(
        |v| layer(v, 1, 0)["volume"] = json!(-1),
        "clips[1].layers[0].volume",
        &["layer \"footage\": volume must be 0 or more, got -1"],
    );
    assert_one_error(|v| layer(v, 1, 0)["trim_start"] = json!(-2), "clips[1].layers[0].trim_start", &["trim_start"]);
    assert_one_error(|v| layer(v, 2, 0)["radius"] = json!(-4), "clips[2].layers[0].radius", &["radius"]);
    // voice: 0.25 s to 3 s = 2.75 s.
    assert_one_error(
        |v| layer(v, 2, 2)["fade_out"] = json!(2.75),
        "clips[2].layers[2].fade_out",
        &["layer \"voice\": fade_in (0.25 s) and fade_out (2.75 s) together exceed the layer's duration (2.75 s)"],
    );
}

#[test]
fn animations_fit_the_layer() {
    // title: 0.5 s to 4 s = 3.5 s.
    assert_one_error(
        |v| layer(v, 0, 2)["animations"][0]["duration"] = json!(4),
        "clips[0].layers[2].animations[0].duration",
        &["layer \"title\": fade_in lasts 4 s, longer than the layer (3.5 s)"],
    );
    assert_one_error(
        |v| layer(v, 0, 2)["animations"][1]["duration"] = json!(0),
        "clips[0].layers[2].animations[1].duration",
        &["layer \"title\": slide_in duration must be greater than 0, got 0"],
    );
    assert_one_error(
        |v| layer(v, 2, 1)["animations"][0]["from"] = json!(0),
        "clips[2].layers[1].animations[0].from",
        &["layer \"logo\": scale from must be greater than 0"],
    );
}

#[test]
fn ken_burns_is_for_images_and_videos_within_the_source() {
    let ken_burns = json!({"kind": "ken_burns", "from": {"x": 0, "y": 0, "width": 1, "height": 1}, "to": {"x": 0, "y": 0, "width": 0.5, "height": 0.5}});
    assert_one_error(
        |v| layer(v, 0, 2)["animations"].as_array_mut().unwrap().push(ken_burns),
        "clips[0].layers[2].animations[2]",
        &["layer \"title\": ken_burns applies to image and video layers only, not to a text layer"],
    );
    assert_one_error(
        |v| layer(v, 0, 1)["animations"][0]["to"]["x"] = json!(0.5),
        "clips[0].layers[1].animations[0].to",
        &["layer \"photo\": ken_burns window must lie inside the source"],
    );
}
