//! A render split into chunks joins into the video the whole render makes:
//! the same frames in the same places (per-frame PSNR against the unsplit render, with
//! moving content so that a frame out of place could not pass), the same sound sample for
//! sample, and the same bytes whichever order the chunks were made in.

use std::ops::Range;

use super::*;
use crate::render::split::{chunks, join, render_frames, render_sound};

/// 3.4 s at 10 fps: a sliding box, a video layer spanning the cuts, a crossfade across the
/// cut at 2 s and a tone.
fn moving(s: &Scratch) -> Template {
    s.ffmpeg(&["-f", "lavfi", "-i", "testsrc=s=64x48:r=25:d=4", "-c:v", "libx264", "-g", "50"], "film.mp4");
    s.ffmpeg(&["-f", "lavfi", "-i", "sine=f=660:d=4:sample_rate=44100"], "tone.wav");
    let mut slide = rect("box", 0.0, 30.0, 30.0, 30.0, "#ff8800");
    slide["animations"] = json!([{ "kind": "slide_in", "duration": 1.8, "direction": "left" }]);
    let film = json!({ "id": "film", "kind": "video", "source": { "file": "film.mp4" }, "x": 100, "y": 10, "width": 64, "height": 48 });
    let tone = json!({ "id": "tone", "kind": "sound", "source": { "file": "tone.wav" }, "start": 0.3, "volume": 0.5 });
    let mut a = clip("a", 2.4, vec![slide, film, tone]);
    a["transition"] = json!({ "kind": "crossfade", "duration": 0.6 });
    let b = clip("b", 1.6, vec![rect("b-box", 40.0, 20.0, 60.0, 40.0, "#2288ff")]);
    let value = template(192, 108, vec![a, b]);
    Template::from_json(serde_json::to_vec(&value).expect("json")).expect("template")
}

/// Renders the chunks of `template` in `order`, the sound, and joins them into `name`.
fn render_split(s: &Scratch, template: &Template, cuts: &[Range<u64>], order: &[usize], name: &str) -> PathBuf {
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(s.path(file)),
        _ => None,
    };
    let settings = RenderSettings { preset: "ultrafast", crf: 18, ..RenderSettings::default() };
    let mut parts = vec![None; cuts.len()];
    for &i in order {
        let path = s.path(&format!("{name}-chunk-{i}.mp4"));
        let out = render_frames(template, &resolve, &settings, cuts[i].clone(), &path, &s.path("thumb.jpg"), &|_| {})
            .expect("chunk");
        assert_eq!(out.frames, cuts[i].end - cuts[i].start);
        parts[i] = Some((path, cuts[i].clone()));
    }
    let sound = s.path(&format!("{name}-sound"));
    render_sound(template, &resolve, &settings, &sound).expect("sound");
    let parts: Vec<_> = parts.into_iter().map(|p| p.expect("every chunk")).collect();
    let out = s.path(name);
    let joined = join(&parts, &sound, 10, &out).expect("join");
    assert_eq!((joined.width, joined.height, joined.frames), (192, 108, 34));
    out
}

fn psnr(a: &Picture, b: &Picture) -> f64 {
    let planes = [(&a.y, &b.y), (&a.u, &b.u), (&a.v, &b.v)];
    let (sum, count) = planes.iter().fold((0.0, 0usize), |(sum, count), (x, y)| {
        let s: f64 = x.iter().zip(y.iter()).map(|(p, q)| (f64::from(*p) - f64::from(*q)).powi(2)).sum();
        (sum + s, count + x.len())
    });
    let mse = sum / count as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64.powi(2) / mse).log10()
    }
}

#[test]
fn chunks_cover_the_frames_in_whole_seconds() {
    assert_eq!(chunks(34, 10, 1.0), vec![0..10, 10..20, 20..30, 30..34]);
    assert_eq!(chunks(30, 30, 10.0), vec![0..30]);
    assert_eq!(chunks(3600, 30, 10.0).len(), 12);
    assert_eq!(chunks(5, 10, 0.0), vec![0..1, 1..2, 2..3, 3..4, 4..5]);
}

#[test]
fn a_split_render_joins_into_the_whole_render_frame_for_frame() {
    let s = Scratch::new();
    let template = moving(&s);
    let whole = s.render_template(&template, Quality::Default).expect("whole render");
    // The sound is mixed and encoded again, not taken from the whole render.
    crate::render::forget_kept_sound();
    let cuts = chunks(34, 10, 1.0);
    let joined = render_split(&s, &template, &cuts, &[0, 1, 2, 3], "joined.mp4");

    let (ours, theirs) = (decode_frames(&joined), whole.frames());
    assert_eq!(ours.len(), 34, "same frame count");
    assert_eq!(theirs.len(), 34);
    for (n, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        let db = psnr(a, b);
        assert!(db >= 45.0, "frame {n}: PSNR {db:.1} dB against the whole render");
        // Where the content moves, it matches its own frame better than the next one: a
        // frame out of place at a cut would not.
        if let Some(next) = theirs.get(n + 1).filter(|next| psnr(b, next) < 45.0) {
            let neighbour = psnr(a, next);
            assert!(db > neighbour + 3.0, "frame {n}: {db:.1} dB against its own, {neighbour:.1} dB the next");
        }
    }
    // The same durations as the whole render, and the sound sample for sample.
    let (container, video, audio) = durations(&joined);
    assert!((video - 3.4).abs() < 1e-6, "video lasts {video}");
    assert!((audio.expect("sound") - 3.4).abs() <= 1024.0 / 48_000.0);
    assert!((container - durations(&whole.mp4).0).abs() < 1e-3);
    assert_eq!(decode_audio(&joined), decode_audio(&whole.mp4), "the sound is the whole render's");
    assert!(rms(&decode_audio(&joined)[0], 1.0, 3.0) > 0.02, "and it sounds");
}

#[test]
fn chunks_made_in_any_order_join_into_the_same_bytes() {
    let s = Scratch::new();
    let template = moving(&s);
    let cuts = chunks(34, 10, 1.0);
    let first = render_split(&s, &template, &cuts, &[0, 1, 2, 3], "in-order.mp4");
    let second = render_split(&s, &template, &cuts, &[3, 1, 0, 2], "out-of-order.mp4");
    assert_eq!(std::fs::read(&first).expect("first"), std::fs::read(&second).expect("second"));
}

#[test]
fn a_chunk_out_of_its_place_is_refused() {
    let s = Scratch::new();
    let template = moving(&s);
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(s.path(file)),
        _ => None,
    };
    let settings = RenderSettings { preset: "ultrafast", ..RenderSettings::default() };
    let (a, b) = (s.path("a.mp4"), s.path("b.mp4"));
    render_frames(&template, &resolve, &settings, 0..10, &a, &s.path("t.jpg"), &|_| {}).expect("chunk");
    render_frames(&template, &resolve, &settings, 10..20, &b, &s.path("t.jpg"), &|_| {}).expect("chunk");
    render_sound(&template, &resolve, &settings, &s.path("sound")).expect("sound");
    let out = s.path("out.mp4");
    let gap = join(&[(a.clone(), 0..10), (b.clone(), 20..30)], &s.path("sound"), 10, &out);
    assert!(matches!(gap, Err(RenderError::Internal(_))), "{gap:?}");
    let short = join(&[(a, 0..10), (b, 10..25)], &s.path("sound"), 10, &out);
    assert!(matches!(short, Err(RenderError::Internal(_))), "{short:?}");
    assert!(!out.exists(), "no partial file is left");
    let past = render_frames(&template, &resolve, &settings, 30..40, &out, &s.path("t.jpg"), &|_| {});
    assert!(matches!(past, Err(RenderError::Internal(_))), "{past:?}");
}
