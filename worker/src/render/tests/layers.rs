use super::*;

const RED: (u8, u8, u8) = (255, 0, 0);
const BLUE: (u8, u8, u8) = (0, 0, 255);
const BLACK: (u8, u8, u8) = (0, 0, 0);
const WHITE: (u8, u8, u8) = (255, 255, 255);

fn image_layer(id: &str, file: &str, fit: &str, x: f64, y: f64, w: f64, h: f64) -> Value {
    json!({ "id": id, "kind": "image", "source": { "file": file }, "fit": fit, "x": x, "y": y, "width": w, "height": h })
}

/// A 2:1 picture: red inside a 10 px blue border.
fn bordered(s: &Scratch) {
    s.ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=180x80,pad=200:100:10:10:blue", "-frames:v", "1"], "wide.png");
}

#[test]
fn contain_shows_bars_and_cover_crops_the_sides() {
    let s = Scratch::new();
    bordered(&s);
    // An 80×80 box at (40, 4).
    let contain = s
        .render(
            template(
                160,
                90,
                vec![clip("c", 0.5, vec![image_layer("pic", "wide.png", "contain", 40.0, 4.0, 80.0, 80.0)])],
            ),
            Quality::Default,
        )
        .expect("render")
        .frames();
    // The picture lands at 80×40 in the middle: bars of background above and below, its
    // blue border at the box's sides.
    assert_color(&contain[2], 80, 12, BLACK, 12);
    assert_color(&contain[2], 80, 76, BLACK, 12);
    assert_color(&contain[2], 80, 44, RED, 16);
    assert_color(&contain[2], 41, 44, BLUE, 24);
    let cover = s
        .render(
            template(
                160,
                90,
                vec![clip("c", 0.5, vec![image_layer("pic", "wide.png", "cover", 40.0, 4.0, 80.0, 80.0)])],
            ),
            Quality::Default,
        )
        .expect("render")
        .frames();
    // Scaled to 160×80 and cropped to the middle 80: no side border, the whole box red
    // except the top and bottom border rows; nothing outside the box.
    assert_color(&cover[2], 42, 44, RED, 16);
    assert_color(&cover[2], 118, 44, RED, 16);
    assert_color(&cover[2], 80, 16, RED, 16);
    assert_color(&cover[2], 80, 6, BLUE, 24);
    assert_color(&cover[2], 36, 44, BLACK, 12);
    assert_color(&cover[2], 124, 44, BLACK, 12);
}

#[test]
fn rotation_turns_the_box_about_its_centre() {
    let s = Scratch::new();
    let mut bar = rect("bar", 50.0, 40.0, 60.0, 10.0, "#ffffff");
    bar["rotation"] = json!(90.0);
    let frames =
        s.render(template(160, 90, vec![clip("c", 0.5, vec![bar])]), Quality::Default).expect("render").frames();
    // Upright now: 10 wide, 60 tall, centred at (80, 45).
    assert_color(&frames[1], 80, 22, WHITE, 16);
    assert_color(&frames[1], 80, 68, WHITE, 16);
    assert_color(&frames[1], 60, 45, BLACK, 12);
    assert_color(&frames[1], 100, 45, BLACK, 12);
}

#[test]
fn opacity_and_fade_in_scale_the_layer() {
    let s = Scratch::new();
    let mut half = rect("half", 0.0, 0.0, 80.0, 90.0, "#ffffff");
    half["opacity"] = json!(0.5);
    let mut fading = rect("fading", 80.0, 0.0, 80.0, 90.0, "#ffffff");
    fading["animations"] = json!([{ "kind": "fade_in", "duration": 1.0 }]);
    let frames = s
        .render(template(160, 90, vec![clip("c", 2.0, vec![half, fading])]), Quality::Default)
        .expect("render")
        .frames();
    assert_color(&frames[3], 40, 45, (128, 128, 128), 12);
    assert_color(&frames[0], 120, 45, BLACK, 12);
    assert_color(&frames[5], 120, 45, (128, 128, 128), 12);
    assert_color(&frames[15], 120, 45, WHITE, 12);
}

#[test]
fn slide_in_moves_the_layer_into_its_box_and_clips_it_there() {
    let s = Scratch::new();
    let mut sliding = rect("s", 40.0, 20.0, 80.0, 50.0, "#ffffff");
    sliding["animations"] = json!([{ "kind": "slide_in", "duration": 1.0, "direction": "right" }]);
    let frames =
        s.render(template(160, 90, vec![clip("c", 2.0, vec![sliding])]), Quality::Default).expect("render").frames();
    // Half way: it has entered from the left edge of its box up to the middle.
    assert_color(&frames[5], 60, 45, WHITE, 16);
    assert_color(&frames[5], 100, 45, BLACK, 12);
    assert_color(&frames[5], 20, 45, BLACK, 12);
    assert_color(&frames[12], 100, 45, WHITE, 12);
}

#[test]
fn ken_burns_moves_the_window_over_the_picture() {
    let s = Scratch::new();
    // Quadrants: red top left, blue bottom right.
    s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=red:s=80x45,pad=160:90:0:0:green,drawbox=x=80:y=45:w=80:h=45:color=blue:t=fill",
            "-frames:v",
            "1",
        ],
        "quads.png",
    );
    let mut pic = image_layer("pic", "quads.png", "cover", 0.0, 0.0, 160.0, 90.0);
    pic["animations"] = json!([{ "kind": "ken_burns", "from": { "x": 0, "y": 0, "width": 0.5, "height": 0.5 }, "to": { "x": 0.5, "y": 0.5, "width": 0.5, "height": 0.5 } }]);
    let frames =
        s.render(template(160, 90, vec![clip("c", 2.0, vec![pic])]), Quality::Default).expect("render").frames();
    assert_color(&frames[0], 80, 45, RED, 16);
    assert_color(&frames[19], 80, 45, BLUE, 16);
}

#[test]
fn text_is_drawn_in_its_box() {
    let s = Scratch::new();
    let text = json!({
        "id": "title", "kind": "text", "x": 20, "y": 20, "width": 120, "height": 50,
        "text": "<b>HELLO</b>", "font": { "family": "Liberation Sans", "size": 30, "color": "#ffffff" }
    });
    let frames =
        s.render(template(160, 90, vec![clip("c", 0.5, vec![text])]), Quality::Default).expect("render").frames();
    let bright = |x0: u32, x1: u32, y0: u32, y1: u32| {
        (y0..y1).flat_map(|y| (x0..x1).map(move |x| (x, y))).filter(|(x, y)| frames[2].at(*x, *y).y > 200).count()
    };
    assert!(bright(20, 140, 20, 70) > 100, "the text has ink in its box");
    assert_eq!(bright(0, 160, 72, 90), 0, "nothing below the box");
}

/// A 64×64 10 fps video whose frame k has luma 16 + 6k (k < 30).
fn counting_video(s: &Scratch) {
    s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=black:s=64x64:r=10:d=3",
            "-vf",
            "geq=lum='16+6*N':cb=128:cr=128",
            "-c:v",
            "libx264",
            "-qp",
            "0",
            "-pix_fmt",
            "yuv420p",
        ],
        "count.mp4",
    );
}

fn luma(pic: &Picture) -> i32 {
    i32::from(pic.at(32, 32).y)
}

#[test]
fn video_trim_start_picks_the_matching_source_frames_and_loop_starts_over() {
    let s = Scratch::new();
    counting_video(&s);
    let video = json!({ "id": "v", "kind": "video", "source": { "file": "count.mp4" }, "x": 0, "y": 0, "width": 64, "height": 64, "trim_start": 1.0 });
    let frames =
        s.render(template(64, 64, vec![clip("c", 1.5, vec![video])]), Quality::Default).expect("render").frames();
    for (n, frame) in frames.iter().enumerate() {
        let expected = 16 + 6 * (10 + n as i32);
        assert!(
            (luma(frame) - expected).abs() <= 3,
            "output frame {n}: luma {} for source frame {}",
            luma(frame),
            10 + n
        );
    }
    // A 1.5 s layer over the last second of the source: it plays 20..29, then 20.. again.
    let looping = json!({ "id": "v", "kind": "video", "source": { "file": "count.mp4" }, "x": 0, "y": 0, "width": 64, "height": 64, "trim_start": 2.0, "loop": true });
    let frames =
        s.render(template(64, 64, vec![clip("c", 1.5, vec![looping])]), Quality::Default).expect("render").frames();
    for (n, frame) in frames.iter().enumerate() {
        let expected = 16 + 6 * (20 + (n as i32 % 10));
        assert!((luma(frame) - expected).abs() <= 3, "looped frame {n}: luma {}, expected {expected}", luma(frame));
    }
    // Without loop the last frame is held.
    let held = json!({ "id": "v", "kind": "video", "source": { "file": "count.mp4" }, "x": 0, "y": 0, "width": 64, "height": 64, "trim_start": 2.5 });
    let frames =
        s.render(template(64, 64, vec![clip("c", 1.0, vec![held])]), Quality::Default).expect("render").frames();
    assert!((luma(&frames[9]) - (16 + 6 * 29)).abs() <= 3, "held frame luma {}", luma(&frames[9]));
}

#[test]
fn a_video_scaled_to_cover_the_canvas_shows_every_frame_and_holds_the_last() {
    // Scaled 64 → 32 over the whole canvas, the frames are scaled into the canvases
    // themselves; the held last frame repeats, which is drawn from the layer's own copy.
    let s = Scratch::new();
    counting_video(&s);
    let held = json!({ "id": "v", "kind": "video", "source": { "file": "count.mp4" }, "x": 0, "y": 0, "width": 32, "height": 32, "trim_start": 2.5 });
    let frames =
        s.render(template(32, 32, vec![clip("c", 1.0, vec![held])]), Quality::Default).expect("render").frames();
    assert_eq!(frames.len(), 10);
    for (n, frame) in frames.iter().enumerate() {
        let expected = 16 + 6 * (25 + n.min(4) as i32);
        let shown = i32::from(frame.at(16, 16).y);
        assert!((shown - expected).abs() <= 3, "output frame {n}: luma {shown}, expected {expected}");
    }
}

#[test]
fn svg_pictures_are_rasterised_at_their_box_size() {
    let s = Scratch::new();
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="10" height="10" fill="#ff0000"/><rect x="10" width="10" height="10" fill="#0000ff"/></svg>"##;
    std::fs::write(s.path("two.svg"), svg).expect("write");
    let layer = image_layer("vector", "two.svg", "fill", 0.0, 0.0, 160.0, 90.0);
    let frames =
        s.render(template(160, 90, vec![clip("c", 0.5, vec![layer])]), Quality::Default).expect("render").frames();
    assert_color(&frames[1], 40, 45, RED, 16);
    assert_color(&frames[1], 120, 45, BLUE, 16);
}
