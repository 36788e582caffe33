use super::*;

const RED: (u8, u8, u8) = (255, 0, 0);
const BLUE: (u8, u8, u8) = (0, 0, 255);
const WHITE: (u8, u8, u8) = (255, 255, 255);

/// Clip "a" (red, with a white marker at x 80..100) then clip "b" (blue), 1 s each, with
/// `transition` of 0.4 s: the transition covers frames 6..10 at progress 0, ¼, ½, ¾.
fn two_clips(s: &Scratch, transition: Value) -> Vec<Picture> {
    let mut a = clip(
        "a",
        1.0,
        vec![rect("red", 0.0, 0.0, 160.0, 90.0, "#ff0000"), rect("marker", 80.0, 0.0, 20.0, 90.0, "#ffffff")],
    );
    a["transition"] = transition;
    let b = clip("b", 1.0, vec![rect("blue", 0.0, 0.0, 160.0, 90.0, "#0000ff")]);
    let out = s.render(template(160, 90, vec![a, b]), Quality::Default).expect("render");
    let frames = out.frames();
    assert_eq!(frames.len(), 16);
    frames
}

#[test]
fn crossfade_blends_the_two_clips_in_its_middle() {
    let s = Scratch::new();
    let frames = two_clips(&s, json!({ "kind": "crossfade", "duration": 0.4 }));
    assert_color(&frames[5], 20, 45, RED, 12);
    assert_color(&frames[8], 20, 45, (128, 0, 128), 16);
    assert_color(&frames[10], 20, 45, BLUE, 12);
    let quarter = rgb(&frames[7], 20, 45);
    assert!(quarter.0 > quarter.2, "a quarter in, red still dominates: {quarter:?}");
}

#[test]
fn fade_color_passes_through_the_colour() {
    let s = Scratch::new();
    let frames = two_clips(&s, json!({ "kind": "fade_color", "duration": 0.4, "color": "#ffffff" }));
    assert_color(&frames[8], 20, 45, WHITE, 12);
    let before = rgb(&frames[7], 20, 45);
    assert!(before.0 > 200 && before.1 > 80 && before.1 < 200, "half way to white from red: {before:?}");
    let after = rgb(&frames[9], 20, 45);
    assert!(after.2 > 200 && after.0 > 80 && after.0 < 200, "half way from white to blue: {after:?}");
}

#[test]
fn wipe_reveals_the_next_clip_moving_in_its_direction() {
    let s = Scratch::new();
    let right = two_clips(&s, json!({ "kind": "wipe", "duration": 0.4, "direction": "right" }));
    // Edge at 40 px, then 120 px: blue on the left of it.
    assert_color(&right[7], 36, 45, BLUE, 12);
    assert_color(&right[7], 44, 45, RED, 12);
    assert_color(&right[9], 116, 45, BLUE, 12);
    assert_color(&right[9], 124, 45, RED, 12);
    let up = two_clips(&s, json!({ "kind": "wipe", "duration": 0.4, "direction": "up" }));
    // Moving up: blue from the bottom, the edge at 90 − 22 = 68 px, then 90 − 68 = 22.
    assert_color(&up[7], 20, 74, BLUE, 12);
    assert_color(&up[7], 20, 62, RED, 12);
    assert_color(&up[9], 20, 28, BLUE, 12);
}

#[test]
fn slide_pushes_both_clips_in_its_direction() {
    let s = Scratch::new();
    let left = two_clips(&s, json!({ "kind": "slide", "duration": 0.4, "direction": "left" }));
    // A quarter in: everything moved 40 px left; the marker (80..100) is at 40..60 and
    // the blue clip fills 120..160.
    assert_color(&left[7], 50, 45, WHITE, 12);
    assert_color(&left[7], 90, 45, RED, 12);
    assert_color(&left[7], 140, 45, BLUE, 12);
    let right = two_clips(&s, json!({ "kind": "slide", "duration": 0.4, "direction": "right" }));
    // Moving right: the marker at 120..140, blue on the left 0..40.
    assert_color(&right[7], 130, 45, WHITE, 12);
    assert_color(&right[7], 20, 45, BLUE, 12);
    assert_color(&right[7], 60, 45, RED, 12);
}
