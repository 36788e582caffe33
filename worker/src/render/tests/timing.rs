use super::*;

const RED: (u8, u8, u8) = (255, 0, 0);
const BLACK: (u8, u8, u8) = (0, 0, 0);

#[test]
fn frame_count_and_durations_are_the_sum_of_clips_minus_transitions() {
    let s = Scratch::new();
    let mut a = clip("a", 1.5, vec![rect("bg-a", 0.0, 0.0, 160.0, 90.0, "#ff0000")]);
    a["transition"] = json!({ "kind": "crossfade", "duration": 0.5 });
    let b = clip("b", 1.3, vec![rect("bg-b", 0.0, 0.0, 160.0, 90.0, "#0000ff")]);
    let out = s.render(template(160, 90, vec![a, b]), Quality::Default).expect("render");
    // 1.5 + 1.3 − 0.5 = 2.3 s at 10 fps.
    assert_eq!(out.output.frames, 23);
    assert!((out.output.duration - 2.3).abs() < 1e-9);
    assert_eq!(out.frames().len(), 23);
    let (container, video, audio) = durations(&out.mp4);
    assert!((video - 2.3).abs() < 1e-6, "video stream lasts {video}");
    let audio = audio.expect("an audio stream");
    assert!((audio - 2.3).abs() <= 1024.0 / 48_000.0, "audio stream lasts {audio}");
    assert!((container - 2.3).abs() <= 1024.0 / 48_000.0, "container lasts {container}");
    assert!(std::fs::metadata(&out.jpg).expect("thumbnail").len() > 0);
}

#[test]
fn a_layer_is_absent_before_its_start_and_present_from_its_start_frame_to_its_end() {
    let s = Scratch::new();
    let mut shape = rect("box", 40.0, 20.0, 80.0, 50.0, "#ff0000");
    shape["start"] = json!(1.0);
    shape["end"] = json!(2.0);
    let out = s.render(template(160, 90, vec![clip("c", 3.0, vec![shape])]), Quality::Default).expect("render");
    let frames = out.frames();
    assert_eq!(frames.len(), 30);
    assert_color(&frames[9], 80, 45, BLACK, 12);
    assert_color(&frames[10], 80, 45, RED, 12);
    assert_color(&frames[19], 80, 45, RED, 12);
    assert_color(&frames[20], 80, 45, BLACK, 12);
    // Outside the box, never.
    assert_color(&frames[15], 20, 45, BLACK, 12);
}

#[test]
fn portrait_and_square_canvases_render_at_their_size() {
    for (w, h) in [(90, 160), (100, 100)] {
        let s = Scratch::new();
        let layer = rect("box", 0.0, f64::from(h) / 2.0, f64::from(w), f64::from(h) / 2.0, "#ff0000");
        let out = s.render(template(w, h, vec![clip("c", 1.0, vec![layer])]), Quality::Default).expect("render");
        assert_eq!((out.output.width, out.output.height), (w, h));
        let frames = out.frames();
        assert_eq!((frames[0].width, frames[0].height), (w, h));
        assert_color(&frames[3], w / 2, h / 4, BLACK, 12);
        assert_color(&frames[3], w / 2, h * 3 / 4, RED, 12);
    }
}

#[test]
fn quality_480p_sets_the_shorter_side_and_scales_every_position() {
    let s = Scratch::new();
    let layer = rect("box", 960.0, 540.0, 480.0, 270.0, "#ff0000");
    let mut t = template(1920, 1080, vec![clip("c", 0.5, vec![layer])]);
    t["canvas"]["fps"] = json!(10);
    let out = s.render(t, Quality::P480).expect("render");
    assert_eq!((out.output.width, out.output.height), (854, 480));
    let frames = out.frames();
    assert_eq!((frames[0].width, frames[0].height), (854, 480));
    // The box lands at (427, 240)–(640, 360).
    assert_color(&frames[2], 530, 300, RED, 12);
    assert_color(&frames[2], 420, 300, BLACK, 12);
    assert_color(&frames[2], 530, 234, BLACK, 12);
    assert_color(&frames[2], 646, 300, BLACK, 12);
    let thumb = image::open(&out.jpg).expect("thumbnail");
    assert_eq!((thumb.width(), thumb.height()), (640, 360));
}
