//! The top rendition as a stream copy of sources that already are what it would be.

use std::cell::RefCell;

use ffmpeg_next as ffmpeg;

use super::super::av;
use super::super::passthrough::same_video_packets;
use super::*;

/// testsrc2 at `size`, `seconds` long, 30 fps, with a sine, through libx264 with `video`
/// options, AAC sound.
fn h264(s: &Scratch, size: &str, seconds: u32, video: &[&str], name: &str) -> PathBuf {
    let picture = format!("testsrc2=s={size}:r=30:d={seconds}");
    let sound = format!("sine=f=440:d={seconds}");
    let mut args = vec!["-f", "lavfi", "-i", &picture, "-f", "lavfi", "-i", &sound, "-c:v", "libx264"];
    args.extend_from_slice(video);
    args.extend_from_slice(&["-c:a", "aac", "-shortest"]);
    s.ffmpeg(&args, name)
}

/// Every packet of the main picture stream: payload, pts and dts in seconds.
struct Packets {
    payloads: Vec<Vec<u8>>,
    pts: Vec<f64>,
    dts: Vec<f64>,
}

fn packets(path: &Path, medium: ffmpeg::media::Type) -> Packets {
    av::init();
    let mut input = ffmpeg::format::input(path).expect("open");
    let stream = input.streams().best(medium).expect("stream");
    let (index, tb) = (stream.index(), stream.time_base());
    let mut out = Packets { payloads: Vec::new(), pts: Vec::new(), dts: Vec::new() };
    for (stream, packet) in input.packets() {
        if stream.index() == index {
            out.payloads.push(packet.data().unwrap_or(&[]).to_vec());
            out.pts.push(av::seconds(packet.pts().expect("pts"), tb));
            out.dts.push(av::seconds(packet.dts().expect("dts"), tb));
        }
    }
    out
}

/// Decodes every picture of `path`; the number of frames (panics on a decoding error).
fn decode_all(path: &Path) -> usize {
    av::init();
    let mut input = ffmpeg::format::input(path).expect("open");
    let stream = input.streams().best(ffmpeg::media::Type::Video).expect("video");
    let index = stream.index();
    let context = ffmpeg::codec::context::Context::from_parameters(stream.parameters()).expect("context");
    let mut decoder = context.decoder().video().expect("decoder");
    let mut frame = ffmpeg::frame::Video::empty();
    let mut frames = 0;
    let mut receive = |decoder: &mut ffmpeg::decoder::Video| loop {
        match decoder.receive_frame(&mut frame) {
            Ok(()) => frames += 1,
            Err(ffmpeg::Error::Eof) => break,
            Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::util::error::EAGAIN => break,
            Err(e) => panic!("decoding {}: {e}", path.display()),
        }
    };
    for (stream, packet) in input.packets() {
        if stream.index() == index {
            decoder.send_packet(&packet).expect("send");
            receive(&mut decoder);
        }
    }
    decoder.send_eof().expect("eof");
    receive(&mut decoder);
    frames
}

/// The MP4 renditions, largest first.
fn mp4s(c: &Converted) -> Vec<&Rendition> {
    with_role(c, |r| matches!(r, Role::Video { .. }))
}

fn copied(source: &Path, r: &Rendition) -> bool {
    same_video_packets(source, &r.file).expect("compare")
}

#[test]
fn moderate_1080p_h264_is_copied_into_1080p_and_encoded_below() {
    let s = Scratch::new();
    let input = h264(&s, "1920x1080", 2, &["-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p"], "in.mp4");
    let c = s.convert(&input);
    let outs = mp4s(&c);
    let sizes: Vec<_> = outs.iter().map(|r| (r.role, r.width, r.height)).collect();
    assert_eq!(
        sizes,
        [(1080, 1920, 1080), (720, 1280, 720), (480, 854, 480)].map(|(s, w, h)| (
            Role::Video { short_side: s },
            Some(w),
            Some(h)
        ))
    );
    let (top, lower) = (outs[0], &outs[1..]);
    let (source, copy) = (packets(&input, ffmpeg::media::Type::Video), packets(&top.file, ffmpeg::media::Type::Video));
    assert_eq!(source.payloads.len(), 60);
    assert_eq!(source.payloads.len(), copy.payloads.len(), "same frame count");
    for (i, (a, b)) in source.payloads.iter().zip(&copy.payloads).enumerate() {
        assert!(a == b, "packet {i} differs");
    }
    let span = |p: &Packets| p.pts.iter().copied().fold(f64::MIN, f64::max) - p.pts[0];
    close(span(&copy), span(&source), 1e-3);
    assert!(copied(&input, top));
    assert!(lower.iter().all(|r| !copied(&input, r)), "720p and 480p are encoded");

    // Rebased like the encoded renditions, with the same once-encoded AAC.
    let encoded = packets(&lower[0].file, ffmpeg::media::Type::Video);
    close(copy.pts[0], encoded.pts[0], 1e-3);
    let sound = |r: &Rendition| packets(&r.file, ffmpeg::media::Type::Audio).payloads;
    assert_eq!(sound(top), sound(lower[0]));

    let p = probed(&top.file);
    assert_eq!(
        (p.video_codec.as_deref(), p.audio_codec.as_deref(), p.width, p.height),
        (Some("h264"), Some("aac"), Some(1920), Some(1080))
    );
    close(p.duration.expect("duration"), 2.0, 0.1);
    let source_rate = probed(&input).bitrate.expect("bit rate") as f64;
    let copy_rate = top.bitrate.expect("a copy reports its bit rate") as f64;
    assert!(copy_rate > 0.5 * source_rate && copy_rate < source_rate, "{copy_rate} vs {source_rate}");
    assert_eq!(top.codec.as_deref(), Some("h264"));
    assert_eq!(top.size, std::fs::metadata(&top.file).expect("stat").len());
    let data = std::fs::read(&top.file).expect("read");
    let find = |tag: &[u8]| data.windows(4).position(|w| w == tag);
    assert!(find(b"moov") < find(b"mdat"), "faststart");
    assert_eq!(decode_all(&top.file), 60, "the copy plays to the end");
}

#[test]
fn sources_that_are_not_what_the_rendition_would_be_are_encoded() {
    let cbr = ["-preset", "ultrafast", "-b:v", "6M", "-minrate", "6M", "-maxrate", "6M"];
    let cases: &[(&str, &[&str])] = &[
        ("above-cap.mp4", &[&cbr[..], &["-bufsize", "3M", "-x264-params", "nal-hrd=cbr"]].concat()),
        ("10bit.mp4", &["-preset", "ultrafast", "-pix_fmt", "yuv420p10le"]),
        ("444.mp4", &["-preset", "ultrafast", "-pix_fmt", "yuv444p"]),
        ("interlaced.mp4", &["-preset", "ultrafast", "-flags", "+ildct+ilme", "-pix_fmt", "yuv420p"]),
        ("annexb.ts", &["-preset", "ultrafast", "-pix_fmt", "yuv420p"]),
    ];
    let mut inputs = Vec::new();
    let s = Scratch::new();
    for (name, options) in cases {
        inputs.push(h264(&s, "640x360", 1, options, name));
    }
    inputs.push(
        s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=1", "-c:v", "mpeg4", "-q:v", "5"], "part2.mp4"),
    );
    for input in &inputs {
        let s = Scratch::new();
        let c = s.convert(input);
        let outs = mp4s(&c);
        assert_eq!(outs.len(), 1, "{}", input.display());
        assert!(!copied(input, outs[0]), "{} is encoded", input.display());
        let p = probed(&outs[0].file);
        assert_eq!((p.video_codec.as_deref(), p.width, p.height), (Some("h264"), Some(640), Some(360)));
    }
}

#[test]
fn qualifying_sources_are_copied_under_their_rungs_cap() {
    let s = Scratch::new();
    // 6 Mbit/s: above the 480p cap but below 720p's 7.5 Mbit/s.
    let cbr = [
        "-preset",
        "ultrafast",
        "-b:v",
        "6M",
        "-minrate",
        "6M",
        "-maxrate",
        "6M",
        "-bufsize",
        "3M",
        "-x264-params",
        "nal-hrd=cbr",
        "-pix_fmt",
        "yuv420p",
    ];
    let inputs = [
        h264(&s, "1280x720", 1, &cbr, "720p-6M.mp4"),
        h264(&s, "640x360", 1, &["-preset", "veryfast", "-pix_fmt", "yuv420p"], "bframes.mkv"),
        h264(&s, "640x360", 1, &["-preset", "veryfast", "-pix_fmt", "yuvj420p"], "full-range.mov"),
    ];
    for input in &inputs {
        let s = Scratch::new();
        let c = s.convert(input);
        let top = mp4s(&c)[0];
        assert!(copied(input, top), "{} is copied", input.display());
        assert_eq!(decode_all(&top.file), 30, "{}", input.display());
        close(probed(&top.file).duration.expect("duration"), 1.0, 0.1);
    }
}

#[test]
fn a_rotated_phone_video_keeps_its_rotation_in_the_copy_and_needs_no_video_encode() {
    let s = Scratch::new();
    let input = h264(&s, "640x360", 1, &["-preset", "veryfast", "-pix_fmt", "yuv420p"], "phone.mp4");
    turn_upright(&input);
    let c = s.convert(&input);
    let outs = mp4s(&c);
    assert_eq!(outs.len(), 1, "one rung: the copy");
    assert!(copied(&input, outs[0]));
    assert_eq!((outs[0].width, outs[0].height), (Some(360), Some(640)));
    let p = probed(&outs[0].file);
    assert_eq!((p.width, p.height), (Some(360), Some(640)), "players turn the copy too");
    let t = thumb(&c);
    assert_eq!((t.width, t.height), (Some(360), Some(640)));
}

#[test]
fn a_stream_that_changes_size_midway_is_encoded_after_all() {
    let s = Scratch::new();
    let part = |size: &str, name: &str| {
        s.ffmpeg(
            &["-f", "lavfi", "-i", &format!("testsrc2=s={size}:r=30:d=1"), "-c:v", "libx264", "-preset", "ultrafast"],
            name,
        )
    };
    let (a, b) = (part("640x360", "a.h264"), part("480x270", "b.h264"));
    let joined = s.path("ab.h264");
    let bytes = [std::fs::read(a).expect("a"), std::fs::read(b).expect("b")].concat();
    std::fs::write(&joined, bytes).expect("write");
    let input = s.ffmpeg(&["-r", "30", "-i", joined.to_str().expect("utf-8"), "-c", "copy"], "ab.mp4");
    let seen = RefCell::new(Vec::new());
    let c = convert(&input, &s.out(), &Limits::default(), &|p| seen.borrow_mut().push(p)).expect("convert");
    let outs = mp4s(&c);
    assert_eq!(outs.len(), 1);
    assert!(!copied(&input, outs[0]), "encoded after all");
    assert_eq!(decode_all(&outs[0].file), 60);
    let p = probed(&outs[0].file);
    assert_eq!((p.width, p.height), (Some(640), Some(360)));
    assert!(seen.into_inner().windows(2).all(|w| w[0] <= w[1]), "progress only grows");
}
