//! Media bombs and the decoder surface: files that declare huge frames, a very long
//! duration or many streams, and codecs off the allow-list, are refused before any
//! decoding, with a readable error.

use ffmpeg_next as ffmpeg;

use super::{convert, probe, Limits, Scratch};
use crate::media::limits::Deadline;
use crate::media::{av, decoders, MediaError};

/// A `size` H.264 clip of `frames` frames.
fn h264(s: &Scratch, size: &str, frames: &str, name: &str) -> std::path::PathBuf {
    let graph = format!("testsrc2=s={size}:r=25");
    s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            &graph,
            "-frames:v",
            frames,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ],
        name,
    )
}

#[test]
fn a_video_above_the_frame_cap_is_refused_before_decoding() {
    let s = Scratch::new();
    let input = h264(&s, "640x480", "5", "in.mp4");
    let limits = Limits { max_video_pixels: 320 * 240, ..Limits::default() };
    let err = probe(&input, &limits).expect_err("frames above the cap");
    assert!(matches!(err, MediaError::FrameTooLarge { width: 640, height: 480, limit: 76_800 }), "{err:?}");
    assert_eq!(err.key(), "media.too_large");
    assert_eq!(err.to_string(), "the video is too large: 640×480 frames, at most 76800 pixels per frame are accepted");
    let err = convert(&input, &s.out(), &limits, &|_| {}).expect_err("frames above the cap");
    assert!(matches!(err, MediaError::FrameTooLarge { .. }), "{err:?}");
}

#[test]
fn the_video_cap_is_separate_from_the_image_cap() {
    let s = Scratch::new();
    let input = h264(&s, "640x480", "5", "in.mp4");
    // A tiny image cap does not refuse video frames.
    let limits = Limits { max_pixels: 100, ..Limits::default() };
    let probed = probe(&input, &limits).expect("video within its own cap");
    assert_eq!((probed.width, probed.height), (Some(640), Some(480)));
}

#[test]
fn an_8k_plus_video_is_refused_with_default_limits() {
    let s = Scratch::new();
    // 8000×4400 = 35.2 MP, above the default 7680×4320.
    let input = h264(&s, "8000x4400", "1", "huge.mp4");
    let err = probe(&input, &Limits::default()).expect_err("above 8K");
    assert!(matches!(err, MediaError::FrameTooLarge { width: 8000, height: 4400, .. }), "{err:?}");
}

#[test]
fn a_file_declaring_four_hours_is_refused_with_default_limits() {
    let s = Scratch::new();
    // One second of sound whose timestamps start at 4 h: the container says 4 h.
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "sine=d=1", "-output_ts_offset", "14400", "-c:a", "flac"], "long.mkv");
    let err = probe(&input, &Limits::default()).expect_err("declared 4 h");
    assert!(matches!(err, MediaError::TooLong { .. }), "{err:?}");
}

#[test]
fn a_video_codec_off_the_allow_list_is_refused() {
    let s = Scratch::new();
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=0.4", "-c:v", "ffv1"], "ffv1.mkv");
    let err = probe(&input, &Limits::default()).expect_err("ffv1 is not accepted");
    assert!(matches!(err, MediaError::Unsupported(_)), "{err:?}");
    assert_eq!(err.to_string(), "unsupported file type: the video codec 'ffv1' is not accepted");
    let err = convert(&input, &s.out(), &Limits::default(), &|_| {}).expect_err("ffv1 is not accepted");
    assert!(matches!(err, MediaError::Unsupported(_)), "{err:?}");
}

#[test]
fn an_audio_codec_off_the_allow_list_is_refused() {
    let s = Scratch::new();
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "sine=d=1", "-c:a", "wavpack"], "wavpack.mka");
    let err = probe(&input, &Limits::default()).expect_err("wavpack is not accepted");
    assert_eq!(err.to_string(), "unsupported file type: the audio codec 'wavpack' is not accepted");
    // Beside an accepted picture, the sound is dropped: the video converts, silent.
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=320x240:r=25:d=1",
            "-f",
            "lavfi",
            "-i",
            "sine=d=1",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "wavpack",
        ],
        "h264-wavpack.mkv",
    );
    let probed = probe(&input, &Limits::default()).expect("h264 is accepted");
    assert!(!probed.has_audio);
}

#[test]
fn the_decoder_context_refuses_codecs_off_the_list_and_opens_h264() {
    let s = Scratch::new();
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let ffv1 = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=0.2", "-c:v", "ffv1"], "ffv1.mkv");
    let input = av::open_input(&ffv1, &deadline).expect("open");
    let stream = input.streams().best(ffmpeg::media::Type::Video).expect("stream");
    let err = decoders::context(&stream, "video", u64::MAX).err().expect("refused");
    assert_eq!(err.to_string(), "unsupported file type: the video codec 'ffv1' is not accepted");

    let good = h264(&s, "320x240", "3", "in.mp4");
    let input = av::open_input(&good, &deadline).expect("open");
    let stream = input.streams().best(ffmpeg::media::Type::Video).expect("stream");
    let decoder = decoders::context(&stream, "video", u64::MAX).expect("h264 allowed").decoder().video();
    assert!(decoder.is_ok());
    assert!(decoders::whitelist().split(',').any(|n| n == "h264"));
    assert!(!decoders::whitelist().split(',').any(|n| n == "ffv1" || n == "wavpack"));
}

#[test]
fn a_decoder_refuses_frames_above_its_cap() {
    let s = Scratch::new();
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let input = h264(&s, "640x480", "3", "in.mp4");
    let input = av::open_input(&input, &deadline).expect("open");
    let stream = input.streams().best(ffmpeg::media::Type::Video).expect("stream");
    // libav checks the cap when the decoder opens and on every frame it allocates.
    let capped = decoders::context(&stream, "video", 320 * 240).expect("context").decoder().video();
    assert!(capped.is_err(), "a 640×480 decoder opened under a 320×240 cap");
    let fitting = decoders::context(&stream, "video", 640 * 480).expect("context").decoder().video();
    assert!(fitting.is_ok());
}

#[test]
fn a_file_with_too_many_streams_is_refused() {
    let s = Scratch::new();
    let many: Vec<&str> = std::iter::repeat_n(["-map", "0:a"], av::MAX_STREAMS + 8).flatten().collect();
    let mut args = vec!["-f", "lavfi", "-i", "sine=d=1"];
    args.extend(&many);
    args.extend(["-c:a", "flac"]);
    let input = s.ffmpeg(&args, "many.mka");
    let err = probe(&input, &Limits::default()).expect_err("too many streams");
    assert_eq!(err.to_string(), "unsupported file type: the file has 40 streams, at most 32 are accepted");

    // A few streams are fine.
    let mut args = vec!["-f", "lavfi", "-i", "sine=d=1"];
    args.extend(std::iter::repeat_n(["-map", "0:a"], 4).flatten());
    args.extend(["-c:a", "flac"]);
    let input = s.ffmpeg(&args, "few.mka");
    assert!(probe(&input, &Limits::default()).expect("four streams").has_audio);
}

#[test]
fn streams_without_an_allowed_decoder_beside_the_picture_do_not_stop_a_conversion() {
    let s = Scratch::new();
    std::fs::write(s.path("subs.srt"), "1\n00:00:00,000 --> 00:00:00,500\nHello\n").expect("srt");
    let srt = s.path("subs.srt");
    let srt = srt.to_str().expect("utf-8 path");
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=320x240:r=25:d=1",
            "-i",
            srt,
            "-map",
            "0",
            "-map",
            "1",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:s",
            "mov_text",
        ],
        "subtitled.mp4",
    );
    let converted = s.convert(&input);
    assert_eq!(converted.kind, crate::media::MediaKind::Video);
}

/// The release bundle builds ffmpeg with only the decoders listed in
/// `scripts/lib/bundle-ffmpeg.sh`: each codec on the allow-list has one of them. The names
/// configure takes are libav's with `_` for `-`, but for those below.
#[test]
fn the_bundles_ffmpeg_has_a_decoder_for_every_allowed_codec() {
    const CONFIGURE_NAMES: &[(&str, &str)] = &[("msmpeg4", "msmpeg4v3"), ("libvpx", "libvpx_vp8")];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/lib/bundle-ffmpeg.sh");
    let text = std::fs::read_to_string(script).expect("the bundle's ffmpeg script");
    let list = text.split("bundle_ffmpeg_decoders=(").nth(1).and_then(|rest| rest.split(')').next()).expect("list");
    let bundled: Vec<&str> = list.split_whitespace().collect();
    let mut by_codec = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (id, name) in decoders::allowed_decoders() {
        let configured = CONFIGURE_NAMES.iter().find(|(libav, _)| *libav == name).map(|(_, c)| c.to_string());
        by_codec.entry(format!("{id:?}")).or_default().push(configured.unwrap_or_else(|| name.replace('-', "_")));
    }
    assert_eq!(by_codec.len(), decoders::ALLOWED.len(), "every allowed codec has a decoder here");
    let missing: Vec<_> =
        by_codec.iter().filter(|(_, names)| !names.iter().any(|n| bundled.contains(&n.as_str()))).collect();
    assert!(missing.is_empty(), "allowed codecs the bundle's ffmpeg cannot decode: {missing:?}");
}
