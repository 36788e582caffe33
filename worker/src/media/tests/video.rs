use std::cell::RefCell;

use super::super::{MediaError, MediaKind};
use super::*;

/// testsrc2 at `size`, `seconds` long, 30 fps, with a 440 Hz sine, as H.264/AAC MP4 (index at
/// the end, as most cameras write it).
fn sample_mp4(s: &Scratch, size: &str, seconds: u32, name: &str) -> PathBuf {
    let video = format!("testsrc2=s={size}:r=30:d={seconds}");
    let audio = format!("sine=f=440:d={seconds}");
    s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            &video,
            "-f",
            "lavfi",
            "-i",
            &audio,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
        name,
    )
}

fn videos(c: &Converted) -> Vec<(u32, u32, u32)> {
    with_role(c, |r| matches!(r, Role::Video { .. }))
        .iter()
        .map(|r| match r.role {
            Role::Video { short_side } => (short_side, r.width.unwrap_or(0), r.height.unwrap_or(0)),
            _ => unreachable!(),
        })
        .collect()
}

/// Index (`moov`) before the media data: playable while downloading.
fn is_faststart(path: &Path) -> bool {
    let data = std::fs::read(path).expect("read");
    let find = |tag: &[u8]| data.windows(4).position(|w| w == tag);
    matches!((find(b"moov"), find(b"mdat")), (Some(m), Some(d)) if m < d)
}

#[test]
fn video_720p_yields_720p_and_480p_h264_aac_with_poster_and_duration() {
    let s = Scratch::new();
    let input = sample_mp4(&s, "1280x720", 3, "in.mp4");
    let seen = RefCell::new(Vec::new());
    let c = convert(&input, &s.out(), &Limits::default(), &|p| seen.borrow_mut().push(p)).expect("convert");
    assert_eq!(
        (c.kind, c.format.as_str(), c.width, c.height, c.alpha),
        (MediaKind::Video, "mp4", Some(1280), Some(720), false)
    );
    close(c.duration.expect("duration"), 3.0, 0.1);
    assert_eq!(videos(&c), vec![(720, 1280, 720), (480, 854, 480)], "no 1080p: never upscaled");
    for r in with_role(&c, |r| matches!(r, Role::Video { .. })) {
        let p = probed(&r.file);
        assert_eq!((p.kind, p.format.as_str(), r.content_type), (MediaKind::Video, "mp4", "video/mp4"));
        assert_eq!((p.width, p.height), (r.width, r.height));
        assert_eq!((p.video_codec.as_deref(), p.audio_codec.as_deref()), (Some("h264"), Some("aac")));
        close(p.duration.expect("duration"), 3.0, 0.15);
        close(ffprobe_duration(&r.file), 3.0, 0.15);
        assert!(is_faststart(&r.file), "{} has its index first", r.file.display());
    }
    let t = thumb(&c);
    assert_eq!((t.format.as_str(), t.width, t.height), ("jpeg", Some(640), Some(360)));
    let seen = seen.into_inner();
    assert_eq!(seen.last(), Some(&1.0));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "progress only grows");
}

#[test]
fn rotated_video_keeps_its_rotation_and_reports_the_displayed_size() {
    let s = Scratch::new();
    let input = s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=640x480:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast"],
        "rot.mp4",
    );
    turn_upright(&input);
    assert_eq!((probed(&input).width, probed(&input).height), (Some(480), Some(640)));
    let c = s.convert(&input);
    assert_eq!((c.width, c.height), (Some(480), Some(640)));
    assert_eq!(videos(&c), vec![(480, 480, 640)]);
    let out = &with_role(&c, |r| matches!(r, Role::Video { .. }))[0].file;
    assert_eq!((probed(out).width, probed(out).height), (Some(480), Some(640)), "players turn the rendition too");
    let t = thumb(&c);
    assert_eq!((t.width, t.height), (Some(480), Some(640)));
}

#[test]
fn webm_with_alpha_gets_an_alpha_webm_and_a_png_poster() {
    let s = Scratch::new();
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=red@0.5:s=320x240:r=10:d=1,format=yuva420p",
            "-f",
            "lavfi",
            "-i",
            "sine=d=1",
            "-c:v",
            "libvpx-vp9",
            "-c:a",
            "libopus",
            "-shortest",
        ],
        "alpha.webm",
    );
    let p = probed(&input);
    assert_eq!((p.format.as_str(), p.has_alpha), ("webm", true));
    let c = s.convert(&input);
    assert!(c.alpha);
    assert_eq!(videos(&c), vec![(240, 320, 240)], "below every rung: one at the source size");
    let alpha = with_role(&c, |r| matches!(r, Role::VideoAlpha { short_side: 240 }));
    assert_eq!(alpha.len(), 1);
    let webm = probed(&alpha[0].file);
    assert_eq!(
        (webm.video_codec.as_deref(), webm.audio_codec.as_deref(), webm.has_alpha),
        (Some("vp9"), Some("opus"), true)
    );
    let frame = s.ffmpeg(
        &["-c:v", "libvpx-vp9", "-i", alpha[0].file.to_str().expect("utf-8"), "-frames:v", "1", "-pix_fmt", "rgba"],
        "frame.png",
    );
    let a = ::image::open(&frame).expect("png").to_rgba8().get_pixel(100, 100).0[3];
    assert!((110..=146).contains(&a), "half-transparent pixels stay half-transparent: {a}");
    assert_eq!(thumb(&c).format, "png");
}

#[test]
fn opaque_source_with_an_alpha_channel_is_not_alpha() {
    let s = Scratch::new();
    let input =
        s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=1,format=rgba", "-c:v", "png"], "opaque.mov");
    let p = probed(&input);
    assert_eq!((p.format.as_str(), p.has_alpha), ("mov", true));
    let c = s.convert(&input);
    assert!(!c.alpha);
    assert!(with_role(&c, |r| matches!(r, Role::VideoAlpha { .. })).is_empty());
    assert_eq!(std::fs::read_dir(s.out()).expect("out").count(), 2, "the discarded WebM is gone");
    assert_eq!(thumb(&c).format, "jpeg");
}

#[test]
fn every_accepted_container_converts() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("in.mkv", &["-c:v", "mpeg4", "-c:a", "libmp3lame"], "mkv"),
        ("in.flv", &["-c:v", "flv", "-c:a", "libmp3lame", "-ar", "44100"], "flv"),
        ("in.wmv", &["-c:v", "wmv2", "-c:a", "wmav2"], "wmv"),
        ("in.mpg", &["-c:v", "mpeg2video", "-c:a", "mp2"], "mpeg"),
        ("in.ts", &["-c:v", "mpeg2video", "-c:a", "mp2"], "ts"),
        ("in.avi", &["-c:v", "mpeg4", "-c:a", "libmp3lame"], "avi"),
        ("in.mov", &["-c:v", "mpeg4", "-c:a", "aac"], "mov"),
        ("in.3gp", &["-c:v", "mpeg4", "-c:a", "aac", "-ar", "16000", "-ac", "1"], "3gp"),
        ("in.m4v", &["-c:v", "libx264", "-c:a", "aac", "-f", "ipod", "-brand", "M4V "], "m4v"),
        ("in.webm", &["-c:v", "libvpx-vp9", "-c:a", "libopus", "-deadline", "realtime"], "webm"),
    ];
    for (name, codecs, format) in cases {
        let s = Scratch::new();
        let mut args =
            vec!["-f", "lavfi", "-i", "testsrc2=s=176x144:r=15:d=1", "-f", "lavfi", "-i", "sine=d=1", "-shortest"];
        args.extend_from_slice(codecs);
        let input = s.ffmpeg(&args, name);
        let c = s.convert(&input);
        assert_eq!((c.kind, c.format.as_str()), (MediaKind::Video, *format), "{name}");
        assert_eq!(videos(&c), vec![(144, 176, 144)], "{name}");
        close(c.duration.expect("duration"), 1.0, 0.15);
    }
}

#[test]
fn media_above_the_duration_limit_is_refused() {
    let s = Scratch::new();
    let input = sample_mp4(&s, "320x240", 3, "in.mp4");
    let limits = Limits { max_duration: std::time::Duration::from_secs(2), ..Limits::default() };
    assert!(matches!(probe(&input, &limits), Err(MediaError::TooLong { .. })));
    assert!(matches!(convert(&input, &s.out(), &limits, &|_| {}), Err(MediaError::TooLong { .. })));
}

#[test]
fn a_tiny_time_limit_times_out() {
    let s = Scratch::new();
    let input = sample_mp4(&s, "640x360", 2, "in.mp4");
    let limits = Limits { time_limit: std::time::Duration::from_millis(1), ..Limits::default() };
    let err = convert(&input, &s.out(), &limits, &|_| {}).expect_err("must time out");
    assert!(matches!(err, MediaError::TimedOut { .. }), "{err}");
    assert_eq!(err.key(), "media.timed_out");
    // A limit that expires mid-way through decoding, too.
    let limits = Limits { time_limit: std::time::Duration::from_millis(150), ..Limits::default() };
    let long = sample_mp4(&s, "1280x720", 20, "long.mp4");
    let err = convert(&long, &s.out(), &limits, &|_| {}).expect_err("must time out");
    assert!(matches!(err, MediaError::TimedOut { .. }), "{err}");
}
