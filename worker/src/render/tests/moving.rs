//! Animated GIF and WebP pictures: an image layer loops them as a web page
//! does; a video layer plays them like a video, from `trim_start`, held on the last frame
//! or looping; a still GIF stays a still.

use serde_json::{json, Value};

use super::*;

/// A 40×40 animation at 10 fps, 1 s: red for 0.5 s, then blue (as `name`, by the ffmpeg
/// CLI's GIF or animated WebP encoder).
fn red_then_blue(scratch: &Scratch, name: &str) -> String {
    let graph = "color=c=red:s=40x40:r=10:d=0.5[a];color=c=blue:s=40x40:r=10:d=0.5[b];[a][b]concat=n=2";
    let mut args = vec!["-f", "lavfi", "-i", graph];
    if name.ends_with(".webp") {
        args.extend(["-c:v", "libwebp_anim", "-lossless", "1", "-loop", "0"]);
    }
    scratch.ffmpeg(&args, name);
    name.to_string()
}

/// 80×40 at 10 fps, `seconds` long, black, a `kind` layer of `file` in a 40×40 box at the
/// left with the fields `extra`.
fn showing(kind: &str, file: &str, seconds: f64, extra: Value) -> Value {
    let mut layer =
        json!({ "id": "moving", "kind": kind, "source": { "file": file }, "x": 0, "y": 0, "width": 40, "height": 40 });
    layer.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    template(80, 40, vec![clip("only", seconds, vec![layer])])
}

/// `r` for red, `b` for blue, `.` for neither, at the middle of the box on each frame.
fn colours(rendered: &Rendered) -> String {
    rendered
        .frames()
        .iter()
        .map(|pic| match rgb(pic, 20, 20) {
            (r, g, b) if r > 180 && g < 70 && b < 70 => 'r',
            (r, g, b) if b > 180 && r < 70 && g < 70 => 'b',
            _ => '.',
        })
        .collect()
}

#[test]
fn an_image_layer_loops_an_animated_gif_or_webp() {
    let scratch = Scratch::new();
    for name in ["anim.gif", "anim.webp"] {
        let file = red_then_blue(&scratch, name);
        let rendered = scratch.render(showing("image", &file, 2.5, json!({})), Quality::Default).expect("render");
        assert_eq!(colours(&rendered), "rrrrrbbbbbrrrrrbbbbbrrrrr", "{name}");
    }
}

#[test]
fn a_video_layer_plays_an_animated_picture_like_a_video() {
    let scratch = Scratch::new();
    let file = red_then_blue(&scratch, "anim.gif");
    let play =
        |extra: Value| colours(&scratch.render(showing("video", &file, 2.0, extra), Quality::Default).expect("render"));
    assert_eq!(play(json!({})), "rrrrrbbbbbbbbbbbbbbb", "held on its last frame");
    assert_eq!(play(json!({ "trim_start": 0.2 })), "rrrbbbbbbbbbbbbbbbbb");
    assert_eq!(play(json!({ "trim_start": 0.2, "loop": true })), "rrrbbbbbrrrrrbbbbbrr");
}

#[test]
fn a_still_gif_shows_as_a_picture() {
    let scratch = Scratch::new();
    scratch.ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=40x40", "-frames:v", "1"], "still.gif");
    for kind in ["image", "video"] {
        let rendered = scratch.render(showing(kind, "still.gif", 1.0, json!({})), Quality::Default).expect("render");
        assert_eq!(colours(&rendered), "rrrrrrrrrr", "{kind}");
    }
}
