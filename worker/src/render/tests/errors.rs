use reelfarm_domain::template::values::apply_values;

use super::*;
use crate::render::video::VideoReader;

#[test]
fn a_corrupt_source_fails_with_a_readable_error_naming_the_layer() {
    let s = Scratch::new();
    s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=64x64:r=10:d=2", "-c:v", "libx264"], "good.mp4");
    let bytes = std::fs::read(s.path("good.mp4")).expect("read");
    std::fs::write(s.path("broken.mp4"), &bytes[..bytes.len().min(600)]).expect("write");
    let video = json!({ "id": "background", "kind": "video", "source": { "file": "broken.mp4" }, "x": 0, "y": 0, "width": 64, "height": 64 });
    let err = s.render(template(64, 64, vec![clip("c", 1.0, vec![video])]), Quality::Default).err().expect("refused");
    assert_eq!(err.key(), "render.bad_source", "{err}");
    assert!(err.is_bad_input());
    let message = err.to_string();
    assert!(message.contains("layer \"background\""), "{message}");
    assert!(!s.path("out.mp4").exists(), "no partial output is left");
}

/// `json` as a template.
fn parsed(json: Value) -> Template {
    Template::from_json(serde_json::to_vec(&json).expect("json")).expect("valid")
}

#[test]
fn sources_are_held_to_the_limits_of_the_settings_naming_their_layer() {
    let s = Scratch::new();
    s.ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=200x200", "-frames:v", "1"], "big.png");
    s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast"],
        "clip.mp4",
    );
    let image = json!({ "id": "photo", "kind": "image", "source": { "file": "big.png" }, "x": 0, "y": 0, "width": 32, "height": 32 });
    let video = json!({ "id": "film", "kind": "video", "source": { "file": "clip.mp4" }, "x": 0, "y": 0, "width": 64, "height": 48 });
    let both = parsed(template(64, 64, vec![clip("c", 0.5, vec![image.clone(), video.clone()])]));
    s.render_within(&both, Quality::Default, Limits::default()).expect("within the default limits");

    let small_images = Limits { max_pixels: 10_000, ..Limits::default() };
    let err = s.render_within(&both, Quality::Default, small_images).err().expect("refused");
    assert_eq!(err.key(), "render.bad_source");
    assert_eq!(err.to_string(), "layer \"photo\": the image is too large: 40000 pixels, at most 10000 are accepted");

    let small_frames = Limits { max_video_pixels: 160 * 120, ..Limits::default() };
    let err = s.render_within(&both, Quality::Default, small_frames).err().expect("refused");
    assert!(err.is_bad_input());
    assert_eq!(
        err.to_string(),
        "layer \"film\": the video is too large: 320×240 frames, at most 19200 pixels per frame are accepted"
    );
}

#[test]
fn a_render_estimated_above_the_memory_budget_is_refused_and_one_within_it_releases_its_memory() {
    use crate::media::MemoryBudget;
    let s = Scratch::new();
    s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast"],
        "clip.mp4",
    );
    let video = json!({ "id": "film", "kind": "video", "source": { "file": "clip.mp4" }, "x": 0, "y": 0, "width": 64, "height": 48 });
    let film = parsed(template(64, 64, vec![clip("c", 0.5, vec![video])]));
    // The 320×240 decoder alone needs more than 1 MiB.
    let tight = Limits { memory: MemoryBudget::new(Some(1 << 20)), ..Limits::default() };
    let err = s.render_within(&film, Quality::Default, tight).err().expect("refused");
    assert_eq!(err.key(), "render.too_large");
    assert!(err.is_bad_input(), "permanent: the same worker can never run it");
    let message = err.to_string();
    assert!(message.starts_with("the render needs about "), "{message}");
    assert!(message.ends_with("of memory to decode; this worker allows 1 MiB (REELFARM_MEDIA_MEMORY)"), "{message}");
    let roomy = Limits { memory: MemoryBudget::new(Some(256 << 20)), ..Limits::default() };
    s.render_within(&film, Quality::Default, roomy.clone()).expect("within the budget");
    assert_eq!(roomy.memory.free_mib(), Some(256), "released when the render ended");
}

/// libav 5 does not always release what a packet held when it is read into again: every
/// render of a video layer kept part of its packets (the soak's workers grew ~30 MiB an
/// hour).
#[test]
fn reading_a_video_again_and_again_keeps_none_of_its_packets() {
    let s = Scratch::new();
    // Lossless, so that the packets are large (some 180 KB in all).
    let lossless = ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0"];
    let path = s.ffmpeg(&[&["-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=2"][..], &lossless].concat(), "clip.mp4");
    let size = std::fs::metadata(&path).expect("size").len();
    let play = || {
        let deadline = Deadline::after(std::time::Duration::from_secs(60));
        let mut reader = VideoReader::open(&path, 0.0, false, &deadline, &Limits::default()).expect("open");
        for n in 0..20 {
            reader.frame_at(f64::from(n) / 10.0, &deadline).expect("frame");
        }
    };
    let in_use = || reelfarm_backends::allocator::heap().expect("glibc's counters").0;
    // Settled after a few plays (libav's and the allocator's first allocations), then
    // level: each play used to keep ~14 KB of this video's packets.
    (0..5).for_each(|_| play());
    let before = in_use();
    (0..20).for_each(|_| play());
    let grown = in_use().saturating_sub(before);
    assert!(grown < size / 2, "the heap in use grew by {grown} bytes over 20 plays of a {size}-byte video");
}

/// A reader kept between preview frames reads on long after the call that opened it:
/// its reads answer to the deadline of the frame asked for, not of the call that opened
/// it (those of an editing session's later frames failed as "took longer than the limit").
#[test]
fn a_kept_video_reader_reads_within_each_call_s_own_deadline() {
    let s = Scratch::new();
    let path =
        s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=2", "-c:v", "libx264", "-qp", "0"], "clip.mp4");
    let opening = Deadline::after(std::time::Duration::from_millis(300));
    let mut reader = VideoReader::open(&path, 0.0, false, &opening, &Limits::default()).expect("open");
    reader.frame_at(0.0, &opening).expect("the first frame");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(opening.expired());
    // The rest of the file is read from disk now, past the first call's deadline.
    let later = Deadline::after(std::time::Duration::from_secs(60));
    let (_, serial) = reader.frame_at(1.9, &later).expect("a frame of a later call");
    assert!(serial > 1, "{serial}");
}

#[test]
fn a_sound_codec_off_the_allow_list_is_refused_naming_its_layer() {
    let s = Scratch::new();
    s.ffmpeg(&["-f", "lavfi", "-i", "sine=d=1", "-c:a", "wavpack"], "tone.mka");
    let sound = json!({ "id": "beep", "kind": "sound", "source": { "file": "tone.mka" } });
    let err = s.render(template(64, 64, vec![clip("c", 0.5, vec![sound])]), Quality::Default).err().expect("refused");
    assert_eq!(err.to_string(), "layer \"beep\": unsupported file type: the audio codec 'wavpack' is not accepted");
}

#[test]
fn a_missing_file_and_a_picture_that_is_not_an_image_name_their_layer() {
    let s = Scratch::new();
    let image = json!({ "id": "logo", "kind": "image", "source": { "file": "absent.png" }, "x": 0, "y": 0, "width": 10, "height": 10 });
    let err = s.render(template(64, 64, vec![clip("c", 1.0, vec![image])]), Quality::Default).err().expect("refused");
    assert!(err.to_string().contains("layer \"logo\""), "{err}");
    std::fs::write(s.path("notes.png"), b"these are not pixels at all, just text").expect("write");
    let image = json!({ "id": "logo2", "kind": "image", "source": { "file": "notes.png" }, "x": 0, "y": 0, "width": 10, "height": 10 });
    let err = s.render(template(64, 64, vec![clip("c", 1.0, vec![image])]), Quality::Default).err().expect("refused");
    assert!(err.to_string().contains("layer \"logo2\""), "{err}");
    assert!(err.is_bad_input(), "{err}");
}

#[test]
fn the_first_layer_that_fails_in_the_template_s_order_is_named() {
    // Pictures are made on a second thread while the other layers are prepared: an
    // error is still the first failing layer's.
    let s = Scratch::new();
    s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=256x256", "-frames:v", "1"], "whole.png");
    let bytes = std::fs::read(s.path("whole.png")).expect("read");
    std::fs::write(s.path("cut.png"), &bytes[..bytes.len() / 2]).expect("write");
    std::fs::write(s.path("anim.json"), b"{ not lottie }").expect("write");
    let image = json!({ "id": "photo", "kind": "image", "source": { "file": "cut.png" }, "x": 0, "y": 0, "width": 32, "height": 32 });
    let lottie = json!({ "id": "anim", "kind": "lottie", "source": { "file": "anim.json" }, "x": 0, "y": 0, "width": 32, "height": 32 });
    for (layers, named) in [(vec![image.clone(), lottie.clone()], "photo"), (vec![lottie, image], "anim")] {
        let err = s.render(template(64, 64, vec![clip("c", 1.0, layers)]), Quality::Default).err().expect("refused");
        assert!(err.to_string().starts_with(&format!("layer \"{named}\"")), "{err}");
        assert!(err.is_bad_input(), "{err}");
    }
}

#[test]
fn an_unresolved_source_is_reported_as_not_fetched() {
    let s = Scratch::new();
    let image = json!({ "id": "photo", "kind": "image", "source": { "url": "https://example.com/p.png" }, "x": 0, "y": 0, "width": 10, "height": 10 });
    let err = s.render(template(64, 64, vec![clip("c", 1.0, vec![image])]), Quality::Default).err().expect("refused");
    assert_eq!(err.key(), "render.missing_source");
    assert!(err.to_string().contains("\"photo\"") && err.to_string().contains("https://example.com/p.png"), "{err}");
}

#[test]
fn an_invalid_template_is_refused_naming_the_layer() {
    let s = Scratch::new();
    let json = template(64, 64, vec![clip("c", 1.0, vec![rect("late", 0.0, 0.0, 10.0, 10.0, "#ffffff")])]);
    let mut t = Template::from_json(serde_json::to_vec(&json).expect("json")).expect("valid");
    t.clips[0].layers[0].end = Some(5.0);
    let err = s.render_template(&t, Quality::Default).err().expect("refused");
    assert_eq!(err.key(), "render.invalid_template");
    assert!(err.to_string().contains("layer \"late\""), "{err}");
}

#[test]
fn an_unknown_variable_id_is_refused_naming_it_and_values_reach_the_video() {
    let id = "5b1a2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    let mut layer = rect("placeholder", 0.0, 0.0, 64.0, 64.0, "#ffffff");
    layer["kind"] = json!("image");
    layer.as_object_mut().expect("object").remove("color");
    layer["source"] = json!({ "file": "white.png" });
    layer["variable"] = json!({ "id": id, "name": "Picture" });
    let json = template(64, 64, vec![clip("c", 0.5, vec![layer])]);
    let t = Template::from_json(serde_json::to_vec(&json).expect("json")).expect("valid");
    let unknown = "00000000-0000-4000-8000-000000000000";
    let values = json!({ unknown: "x" }).as_object().cloned().expect("object");
    let errors = apply_values(&t, &values).expect_err("refused");
    assert_eq!(errors[0].variable, unknown);
    assert!(errors[0].message.contains(unknown), "{}", errors[0].message);
    // A file value is not accepted through values; an asset id becomes an asset source,
    // which this render cannot resolve: reported as not fetched, naming the layer.
    let values = json!({ id: "asset-1" }).as_object().cloned().expect("object");
    let applied = apply_values(&t, &values).expect("applied");
    let s = Scratch::new();
    let err = s.render_template(&applied, Quality::Default).err().expect("refused");
    assert!(err.to_string().contains("\"placeholder\"") && err.to_string().contains("asset-1"), "{err}");
}
