//! Template-level rules: version, name, canvas, clips, transitions, soundtrack, sources.

use serde_json::json;

use super::*;

#[test]
fn the_example_is_valid() {
    assert_eq!(example().validate(), Ok(()));
}

#[test]
fn only_version_1_is_accepted() {
    let mut t = example();
    t.version = 2;
    let errors = t.validate().unwrap_err();
    assert_eq!(
        errors,
        [ValidationError::new("version", "unsupported template version 2; this reelfarm reads version 1")]
    );
}

#[test]
fn a_template_needs_a_name() {
    assert_one_error(|v| v["name"] = json!(" "), "name", &["the template needs a name"]);
}

#[test]
fn canvas_sizes_are_even_and_within_limits() {
    assert_one_error(
        |v| v["canvas"]["width"] = json!(1081),
        "canvas.width",
        &["canvas width must be an even number from 16 to 4096, got 1081"],
    );
    assert_one_error(|v| v["canvas"]["height"] = json!(8), "canvas.height", &["got 8"]);
    assert_one_error(|v| v["canvas"]["height"] = json!(4098), "canvas.height", &["got 4098"]);
    assert_one_error(|v| v["canvas"]["fps"] = json!(0), "canvas.fps", &["canvas fps must be from 1 to 60, got 0"]);
}

#[test]
fn a_template_needs_a_clip() {
    assert_one_error(|v| v["clips"] = json!([]), "clips", &["a template needs at least one clip"]);
}

#[test]
fn clip_ids_are_unique() {
    assert_one_error(
        |v| v["clips"][2]["id"] = json!("intro"),
        "clips[2].id",
        &["clip id \"intro\" is used by more than one clip"],
    );
    assert_one_error(|v| v["clips"][1]["id"] = json!(""), "clips[1].id", &["a clip id must not be empty"]);
}

#[test]
fn clip_durations_are_positive() {
    assert_one_error(
        |v| v["clips"][2]["duration"] = json!(0),
        "clips[2].duration",
        &["clip \"outro\": duration must be greater than 0, got 0"],
    );
}

#[test]
fn a_transition_is_shorter_than_both_clips() {
    // intro 4 s → details 5 s.
    assert_one_error(
        |v| v["clips"][0]["transition"]["duration"] = json!(4),
        "clips[0].transition.duration",
        &["clip \"intro\": a transition of 4 s must be shorter than this clip (4 s) and the next clip \"details\" (5 s)"],
    );
    // details 5 s → outro 3 s.
    assert_one_error(
        |v| v["clips"][1]["transition"]["duration"] = json!(3),
        "clips[1].transition.duration",
        &["clip \"details\": a transition of 3 s", "\"outro\" (3 s)"],
    );
    assert_one_error(
        |v| v["clips"][0]["transition"] = json!({"kind": "fade_color", "duration": 0}),
        "clips[0].transition.duration",
        &["clip \"intro\": transition duration must be greater than 0, got 0"],
    );
}

#[test]
fn transitions_into_and_out_of_a_clip_do_not_overlap() {
    assert_one_error(
        |v| {
            v["clips"][0]["transition"]["duration"] = json!(3);
            v["clips"][1]["transition"]["duration"] = json!(2.5);
        },
        "clips[1].transition.duration",
        &["clip \"details\": the transitions into it (3 s) and out of it (2.5 s) together exceed its duration (5 s)"],
    );
}

#[test]
fn the_soundtrack_is_checked() {
    assert_one_error(
        |v| v["soundtrack"]["source"] = json!({"url": "ftp://media.test/a.mp3"}),
        "soundtrack.source.url",
        &["soundtrack: url \"ftp://media.test/a.mp3\" is not an absolute http:// or https:// address"],
    );
    assert_one_error(|v| v["soundtrack"]["volume"] = json!(-1), "soundtrack.volume", &["volume must be 0 or more"]);
    assert_one_error(
        |v| v["soundtrack"]["fade_in"] = json!(10),
        "soundtrack.fade_out",
        &["soundtrack: fade_in (10 s) and fade_out (1.5 s) together exceed the video's duration (10.75 s)"],
    );
    for (field, value, says) in [
        ("db", json!(0), "duck.db must be more than 0 and at most 60, got 0"),
        ("db", json!(61), "duck.db must be more than 0 and at most 60, got 61"),
        ("attack", json!(-0.1), "duck.attack must be 0 to 5 seconds, got -0.1"),
        ("release", json!(6), "duck.release must be 0 to 5 seconds, got 6"),
    ] {
        let value = value.clone();
        assert_one_error(
            move |v| v["soundtrack"]["duck"] = json!({ field: value }),
            &format!("soundtrack.duck.{field}"),
            &[says],
        );
    }
}

#[test]
fn the_loudness_target_is_a_level_a_video_can_have() {
    for bad in [json!(0), json!(-71), json!(-4.5)] {
        assert_one_error(move |v| v["loudness"] = bad, "loudness", &["loudness must be -70 to -5 LUFS"]);
    }
    assert_eq!(read(|v| v["loudness"] = json!(-14)).unwrap().loudness, Some(-14.0));
}

#[test]
fn files_stay_inside_the_template_directory() {
    for bad in ["/etc/passwd", "../secret.png", "media/../../secret.png", "C:\\media\\a.png", "\\\\server\\a.png", ""] {
        assert_one_error(
            |v| layer(v, 0, 1)["source"] = json!({ "file": bad }),
            "clips[0].layers[1].source.file",
            &["layer \"photo\": file", "must be a relative path inside the template's directory"],
        );
    }
    for good in ["a.png", "./media/a.png", "media/sub/a..b.png"] {
        assert!(read(|v| layer(v, 0, 1)["source"] = json!({ "file": good })).is_ok(), "{good}");
    }
}

#[test]
fn urls_are_absolute_http_or_https() {
    for bad in ["media/a.mp4", "file:///etc/passwd", "ftp://media.test/a.mp4", "https://"] {
        assert_one_error(
            |v| layer(v, 1, 0)["source"] = json!({ "url": bad }),
            "clips[1].layers[0].source.url",
            &["layer \"footage\": url", "is not an absolute http:// or https:// address"],
        );
    }
    assert!(read(|v| layer(v, 1, 0)["source"] = json!({"url": "http://127.0.0.1:8080/a.mp4"})).is_ok());
}

#[test]
fn asset_ids_are_not_empty() {
    assert_one_error(
        |v| layer(v, 2, 1)["source"] = json!({"asset": ""}),
        "clips[2].layers[1].source.asset",
        &["layer \"logo\": asset id must not be empty"],
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let errors = invalid(|v| {
        v["canvas"]["fps"] = json!(61);
        v["clips"][2]["id"] = json!("intro");
        layer(v, 0, 0)["opacity"] = json!(2);
        layer(v, 2, 2)["volume"] = json!(-0.5);
    });
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["canvas.fps", "clips[0].layers[0].opacity", "clips[2].id", "clips[2].layers[2].volume"]);
}
