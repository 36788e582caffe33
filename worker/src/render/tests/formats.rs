//! Output formats: each file is read back by ffprobe (codecs, pixel format,
//! frame count, duration) and its pixels by decoding (alpha through the ffmpeg CLI's
//! libvpx and ProRes decoders into RGBA PNGs).

use std::path::Path;
use std::process::Command;

use reelfarm_domain::output::{Format, Output};
use serde_json::{json, Value};

use super::*;

/// Two clips of 1 s at 10 fps on a 160×90 canvas of `background`: a red box on the left
/// half, then a blue box on the right half; a 440 Hz tone under both.
fn two_boxes(scratch: &Scratch, background: &str) -> Value {
    scratch.ffmpeg(&["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "pcm_s16le"], "tone.wav");
    let mut t = template(
        160,
        90,
        vec![
            clip("red", 1.0, vec![rect("r", 0.0, 0.0, 80.0, 90.0, "#ff0000")]),
            clip("blue", 1.0, vec![rect("b", 80.0, 0.0, 80.0, 90.0, "#0000ff")]),
        ],
    );
    t["canvas"]["background"] = json!(background);
    t["soundtrack"] = json!({ "source": { "file": "tone.wav" } });
    t
}

/// ffprobe's answers about the first video stream and the file: codec, pixel format,
/// width, frames, duration, and the audio codec if any.
struct Probe {
    video_codec: String,
    pix_fmt: String,
    width: u32,
    frames: u64,
    duration: f64,
    audio_codec: Option<String>,
    alpha_mode: bool,
}

fn probe(path: &Path) -> Probe {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json"])
        .arg(path)
        .output()
        .expect("ffprobe");
    assert!(out.status.success(), "ffprobe {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).expect("ffprobe JSON");
    let streams = json["streams"].as_array().expect("streams");
    let video = streams.iter().find(|s| s["codec_type"] == "video").expect("a video stream");
    let audio = streams.iter().find(|s| s["codec_type"] == "audio");
    let number = |v: &Value| v.as_str().and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    Probe {
        video_codec: video["codec_name"].as_str().unwrap_or_default().to_string(),
        pix_fmt: video["pix_fmt"].as_str().unwrap_or_default().to_string(),
        width: video["width"].as_u64().unwrap_or(0) as u32,
        frames: number(&video["nb_read_frames"]) as u64,
        duration: number(&json["format"]["duration"]),
        audio_codec: audio.map(|a| a["codec_name"].as_str().unwrap_or_default().to_string()),
        alpha_mode: video["tags"]["alpha_mode"] == "1" || video["tags"]["ALPHA_MODE"] == "1",
    }
}

/// Frame `n` of `path` as RGBA, decoded by the ffmpeg CLI with `decoder` (libvpx-vp9
/// reads a WebM's alpha, which the native VP9 decoder drops).
fn rgba_frame(scratch: &Scratch, path: &Path, decoder: Option<&str>, n: u32) -> image::RgbaImage {
    let png = scratch.path(&format!("frame-{n}.png"));
    let mut command = Command::new("ffmpeg");
    command.args(["-v", "error", "-y"]);
    if let Some(decoder) = decoder {
        command.args(["-c:v", decoder]);
    }
    // The files are BT.709; the CLI's conversion would assume BT.601 otherwise.
    let select = format!("select=eq(n\\,{n}),scale=in_color_matrix=bt709");
    let status = command
        .arg("-i")
        .arg(path)
        .args(["-vf", &select, "-frames:v", "1", "-pix_fmt", "rgba"])
        .arg(&png)
        .status()
        .expect("ffmpeg CLI");
    assert!(status.success(), "decoding frame {n} of {}", path.display());
    image::open(&png).expect("frame PNG").to_rgba8()
}

#[track_caller]
fn assert_rgba(image: &image::RgbaImage, x: u32, y: u32, expected: [u8; 4], tolerance: i32) {
    let got = image.get_pixel(x, y).0;
    let ok = got.iter().zip(expected).all(|(a, b)| (i32::from(*a) - i32::from(b)).abs() <= tolerance);
    assert!(ok, "pixel ({x}, {y}) is {got:?}, expected {expected:?} ± {tolerance}");
}

#[test]
fn a_webm_is_vp9_and_opus_with_every_frame() {
    let scratch = Scratch::new();
    let out = scratch.render_as(two_boxes(&scratch, "#000000"), Output { format: Format::Webm, ..Output::default() });
    let probe = probe(&out.mp4);
    assert_eq!((probe.video_codec.as_str(), probe.pix_fmt.as_str()), ("vp9", "yuv420p"));
    assert_eq!(probe.audio_codec.as_deref(), Some("opus"));
    assert_eq!(probe.frames, 20);
    assert!((probe.duration - 2.0).abs() < 0.03, "duration {}", probe.duration);
    let frames = out.frames();
    assert_eq!(frames.len(), 20);
    assert_color(&frames[5], 20, 45, (255, 0, 0), 24);
    assert_color(&frames[5], 140, 45, (0, 0, 0), 24);
    assert_color(&frames[15], 140, 45, (0, 0, 255), 24);
    let sound = decode_audio(&out.mp4);
    assert!(rms(&sound[0], 0.2, 1.8) > 0.05, "the tone is heard");
}

#[test]
fn a_transparent_webm_keeps_the_canvas_alpha() {
    let scratch = Scratch::new();
    let output = Output { format: Format::Webm, transparent: true, ..Output::default() };
    let out = scratch.render_as(two_boxes(&scratch, "#00000000"), output);
    let probe = probe(&out.mp4);
    assert_eq!(probe.video_codec, "vp9");
    assert!(probe.alpha_mode, "the stream announces alpha");
    assert_eq!(probe.frames, 20);
    let first = rgba_frame(&scratch, &out.mp4, Some("libvpx-vp9"), 5);
    assert_rgba(&first, 20, 45, [255, 0, 0, 255], 12);
    assert_rgba(&first, 140, 45, [0, 0, 0, 0], 8);
    let second = rgba_frame(&scratch, &out.mp4, Some("libvpx-vp9"), 15);
    assert_eq!(second.get_pixel(20, 45).0[3], 0, "the red box is gone in the second clip");
    assert_rgba(&second, 140, 45, [0, 0, 255, 255], 12);
}

#[test]
fn a_mov_is_prores_4444_with_alpha_when_transparent() {
    let scratch = Scratch::new();
    let opaque = scratch.render_as(two_boxes(&scratch, "#000000"), Output { format: Format::Mov, ..Output::default() });
    let probe_opaque = probe(&opaque.mp4);
    assert_eq!((probe_opaque.video_codec.as_str(), probe_opaque.pix_fmt.as_str()), ("prores", "yuv444p10le"));
    assert_eq!(probe_opaque.audio_codec.as_deref(), Some("aac"));
    assert_eq!(probe_opaque.frames, 20);
    assert!((probe_opaque.duration - 2.0).abs() < 0.03, "duration {}", probe_opaque.duration);

    let output = Output { format: Format::Mov, transparent: true, ..Output::default() };
    let clear = scratch.render_as(two_boxes(&scratch, "#00000000"), output);
    let probe_clear = probe(&clear.mp4);
    assert_eq!((probe_clear.video_codec.as_str(), probe_clear.pix_fmt.as_str()), ("prores", "yuva444p10le"));
    let frame = rgba_frame(&scratch, &clear.mp4, None, 5);
    assert_rgba(&frame, 20, 45, [255, 0, 0, 255], 12);
    assert_rgba(&frame, 140, 45, [0, 0, 0, 0], 4);
}

#[test]
fn a_gif_has_the_capped_rate_and_size_and_the_right_colours() {
    let scratch = Scratch::new();
    let output = Output { format: Format::Gif, fps: Some(5), max_width: Some(80), ..Output::default() };
    let out = scratch.render_as(two_boxes(&scratch, "#000000"), output);
    assert_eq!((out.output.frames, out.output.duration), (10, 2.0));
    let probe = probe(&out.mp4);
    assert_eq!((probe.video_codec.as_str(), probe.width, probe.frames), ("gif", 80, 10));
    assert_eq!(probe.audio_codec, None);
    assert!((probe.duration - 2.0).abs() < 0.011, "duration {}", probe.duration);
    let first = rgba_frame(&scratch, &out.mp4, None, 2);
    assert_rgba(&first, 10, 22, [255, 0, 0, 255], 8);
    assert_rgba(&first, 70, 22, [0, 0, 0, 255], 8);
    let second = rgba_frame(&scratch, &out.mp4, None, 7);
    assert_rgba(&second, 10, 22, [0, 0, 0, 255], 8);
    assert_rgba(&second, 70, 22, [0, 0, 255, 255], 8);
}

#[test]
fn a_still_shows_the_frame_at_its_time() {
    let scratch = Scratch::new();
    let output = Output { format: Format::Jpg, still_at: Some(1.5), ..Output::default() };
    let jpg = scratch.render_as(two_boxes(&scratch, "#000000"), output);
    assert_eq!(jpg.output.frames, 0);
    let image = image::open(&jpg.mp4).expect("a JPEG").to_rgb8();
    assert_eq!(image.dimensions(), (160, 90));
    let blue = image.get_pixel(140, 45).0;
    assert!(blue[2] > 200 && blue[0] < 40, "the second clip's blue box: {blue:?}");

    let output = Output { format: Format::Png, transparent: true, still_at: Some(0.5), ..Output::default() };
    let png = scratch.render_as(two_boxes(&scratch, "#00000000"), output);
    let image = image::open(&png.mp4).expect("a PNG").to_rgba8();
    assert_rgba(&image, 20, 45, [255, 0, 0, 255], 4);
    assert_eq!(image.get_pixel(140, 45).0[3], 0, "transparent beside the box");
}

#[test]
fn a_crossfade_on_a_transparent_canvas_fades_alpha_not_colour() {
    let scratch = Scratch::new();
    let mut t = two_boxes(&scratch, "#00000000");
    // The boxes overlap in the middle; the first clip fades into the second over 1 s.
    t["clips"][0]["duration"] = json!(2.0);
    t["clips"][1]["duration"] = json!(2.0);
    t["clips"][0]["transition"] = json!({ "kind": "crossfade", "duration": 1.0 });
    let output = Output { format: Format::Png, transparent: true, still_at: Some(1.5), ..Output::default() };
    let png = scratch.render_as(t, output);
    let image = image::open(&png.mp4).expect("a PNG").to_rgba8();
    // Half way: the red box half transparent and still red (not darkened by the
    // transparent black it fades to), the blue one likewise.
    assert_rgba(&image, 20, 45, [255, 0, 0, 128], 6);
    assert_rgba(&image, 140, 45, [0, 0, 255, 128], 6);
}

/// What ffprobe must read from `format` (transparent or not): video codec, pixel format,
/// audio codec.
fn expected(format: Format, transparent: bool) -> (&'static str, &'static str, Option<&'static str>) {
    match (format, transparent) {
        (Format::Mp4, _) => ("h264", "yuv420p", Some("aac")),
        (Format::Webm, false) => ("vp9", "yuv420p", Some("opus")),
        // The alpha travels beside the VP9 stream (BlockAdditional), announced by a tag.
        (Format::Webm, true) => ("vp9", "yuv420p", Some("opus")),
        (Format::Mov, false) => ("prores", "yuv444p10le", Some("aac")),
        (Format::Mov, true) => ("prores", "yuva444p10le", Some("aac")),
        (Format::Gif, _) => ("gif", "bgra", None),
        (Format::Jpg, _) => ("mjpeg", "", None),
        (Format::Png, false) => ("png", "rgb24", None),
        (Format::Png, true) => ("png", "rgba", None),
    }
}

#[test]
fn every_example_template_renders_in_every_format() {
    use super::golden::{example, examples_dir, EXAMPLES};
    let names = EXAMPLES;
    let scratch = Scratch::new();
    let dir = examples_dir();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    // Every template in every format; the transparent variants (the same encoders with an
    // alpha plane) on every other template, to keep the suite quick.
    let opaque = [(Format::Webm, false), (Format::Gif, false), (Format::Mov, false), (Format::Jpg, false)];
    let clear = [(Format::Webm, true), (Format::Mov, true), (Format::Png, true)];
    for (i, name) in names.into_iter().enumerate() {
        let formats = opaque.iter().chain(if i % 2 == 0 { &clear[..] } else { &clear[2..] }).copied();
        let mut template = example(name);
        // 5 fps keeps the suite quick; every frame is still rendered and counted.
        template.canvas.fps = 5;
        for (format, transparent) in formats {
            let mut template = template.clone();
            if transparent {
                template.canvas.background.a = 0;
            }
            let output = Output { format, transparent, fps: (format == Format::Gif).then_some(4), ..Output::default() };
            let file = scratch.path(&format!("{name}-{format}-{transparent}.{format}"));
            let settings =
                RenderSettings { quality: Quality::P480, output, preset: "ultrafast", ..RenderSettings::default() };
            let rendered = render(&template, &resolve, &settings, &file, &scratch.path("thumb.jpg"), &|_| {})
                .unwrap_or_else(|e| panic!("{name} as {format}: {e}"));
            let probe = probe(&file);
            let (video, pix_fmt, audio) = expected(format, transparent);
            let what = format!("{name} as {format} (transparent: {transparent})");
            assert_eq!(probe.video_codec, video, "{what}");
            assert!(pix_fmt.is_empty() || probe.pix_fmt == pix_fmt, "{what}: {}", probe.pix_fmt);
            assert_eq!((rendered.width.min(rendered.height), probe.width), (480, rendered.width), "{what}: 480p");
            if format.is_still() {
                continue;
            }
            assert_eq!(probe.audio_codec.as_deref(), audio, "{what}");
            assert_eq!(probe.alpha_mode, format == Format::Webm && transparent, "{what}");
            // A GIF lasts as long as the video (frame-exact at the canvas's rate), to the
            // nearest frame of its own rate.
            let fps = f64::from(output.fps_of(5));
            let frames = ((template.duration() * 5.0).round() * fps / 5.0).round() as u64;
            assert_eq!((probe.frames, rendered.frames), (frames, frames), "{what}: every frame");
            assert!((probe.duration - frames as f64 / fps).abs() <= 0.5 / fps, "{what}: duration {}", probe.duration);
        }
    }
}

#[test]
fn a_gif_told_to_stop_during_its_second_pass_stops_and_leaves_no_spool() {
    use crate::render::gif::GifEncoder;
    use crate::render::picture::{Picture, Yuv};
    let scratch = Scratch::new();
    let path = scratch.path("stopped.gif");
    let mut gif = GifEncoder::start(&path, (64, 32), 64, 32, 10).expect("start");
    let mut canvas = Picture::default();
    canvas.reset(64, 32, false);
    for y in [16u8, 128, 235] {
        canvas.fill(Yuv { y, u: 128, v: 128, a: 255 });
        gif.push(&canvas).expect("push");
    }
    let stopped = gif.finish(&|written| if written < 2 { Ok(()) } else { Err(RenderError::Cancelled) });
    assert!(matches!(stopped, Err(RenderError::Cancelled)), "{stopped:?}");
    assert!(!path.with_extension("frames").exists(), "the spooled frames are removed");
}

/// Resident memory of this test process (nextest runs each test in a process of its own).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("VmRSS");
    kib.trim().trim_end_matches(" kB").parse::<u64>().expect("kB") * 1024
}

#[test]
fn a_gif_s_first_pass_keeps_no_frames_in_memory() {
    use crate::render::gif::GifEncoder;
    use crate::render::picture::{Picture, Yuv};
    let scratch = Scratch::new();
    let path = scratch.path("long.gif");
    let (w, h) = (480, 270);
    let mut gif = GifEncoder::start(&path, (w, h), w, h, 25).expect("start");
    let mut canvas = Picture::default();
    canvas.reset(w, h, false);
    gif.push(&canvas).expect("push");
    let before = rss_bytes();
    // 200 frames of 518 KB each: 104 MB, were they held until the palette is made.
    for n in 0..200u32 {
        canvas.fill(Yuv { y: 16 + (n % 200) as u8, u: 128, v: 128, a: 255 });
        gif.push(&canvas).expect("push");
    }
    let grown = rss_bytes().saturating_sub(before);
    assert!(grown < 32 << 20, "the first pass grew by {} MiB", grown >> 20);
    let stopped = gif.finish(&|_| Err(RenderError::Cancelled));
    assert!(matches!(stopped, Err(RenderError::Cancelled)), "{stopped:?}");
}

#[test]
fn a_gifs_progress_counts_its_second_pass() {
    let scratch = Scratch::new();
    let template = Template::from_json(serde_json::to_vec(&two_boxes(&scratch, "#000000")).unwrap()).unwrap();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(scratch.path(file)),
        _ => None,
    };
    let output = Output { format: Format::Gif, ..Output::default() };
    let settings = RenderSettings { output, ..RenderSettings::default() };
    let seen = std::sync::Mutex::new(Vec::new());
    let record = |p: super::super::Progress| seen.lock().unwrap().push((p.frames_done, p.frames_total));
    render(&template, &resolve, &settings, &scratch.path("p.gif"), &scratch.path("p.jpg"), &record).expect("render");
    let seen = seen.into_inner().unwrap();
    assert!(seen.iter().all(|(_, total)| *total == 40), "20 frames drawn, then 20 mapped: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "rising: {seen:?}");
    assert_eq!((seen[19].0, seen.last().unwrap().0), (20, 40), "half when drawn, all when written");
}
