use super::super::{MediaError, MediaKind};
use super::*;

fn sine(s: &Scratch, seconds: u32, extra: &[&str], name: &str) -> PathBuf {
    let graph = format!("sine=f=440:sample_rate=44100:d={seconds}");
    let mut args = vec!["-f", "lavfi", "-i", graph.as_str(), "-ac", "2"];
    args.extend_from_slice(extra);
    s.ffmpeg(&args, name)
}

#[test]
fn wav_yields_aac_and_mp3_renditions_and_a_waveform() {
    let s = Scratch::new();
    let input = sine(&s, 3, &[], "in.wav");
    let p = probed(&input);
    assert_eq!((p.kind, p.format.as_str(), p.content_type, p.width), (MediaKind::Audio, "wav", "audio/wav", None));
    let c = s.convert(&input);
    assert_eq!((c.kind, c.alpha, c.width), (MediaKind::Audio, false, None));
    close(c.duration.expect("duration"), 3.0, 0.05);
    let expected = [("aac", "m4a", "audio/mp4"), ("mp3", "mp3", "audio/mpeg")];
    for (codec, format, content_type) in expected {
        let r = with_role(&c, |r| *r == Role::Audio { codec });
        assert_eq!(r.len(), 1, "{codec}");
        let r = r[0];
        assert_eq!((r.format.as_str(), r.content_type, r.codec.as_deref()), (format, content_type, Some(codec)));
        let out = probed(&r.file);
        assert_eq!(
            (out.kind, out.format.as_str(), out.audio_codec.as_deref()),
            (MediaKind::Audio, format, Some(codec))
        );
        close(out.duration.expect("duration"), 3.0, 0.1);
        close(ffprobe_duration(&r.file), 3.0, 0.1);
    }
    let t = thumb(&c);
    assert_eq!((t.format.as_str(), t.width, t.height), ("png", Some(800), Some(200)));
    let waveform = ::image::open(&t.file).expect("png");
    assert_eq!((waveform.width(), waveform.height()), (800, 200));
}

#[test]
fn mp3_with_cover_art_is_audio_not_video() {
    let s = Scratch::new();
    let cover = s.ffmpeg(&["-f", "lavfi", "-i", "color=c=blue:s=300x300", "-frames:v", "1"], "cover.jpg");
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=d=2",
            "-i",
            cover.to_str().expect("utf-8"),
            "-map",
            "0:a",
            "-map",
            "1:v",
            "-c:a",
            "libmp3lame",
            "-c:v",
            "copy",
            "-disposition:v",
            "attached_pic",
        ],
        "song.mp3",
    );
    let c = s.convert(&input);
    assert_eq!((c.kind, c.format.as_str()), (MediaKind::Audio, "mp3"));
    close(c.duration.expect("duration"), 2.0, 0.1);
}

#[test]
fn every_accepted_audio_format_converts() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("in.flac", &[], "flac"),
        ("in.m4a", &["-c:a", "aac"], "m4a"),
        ("in.mp3", &["-c:a", "libmp3lame"], "mp3"),
        ("in.ogg", &["-c:a", "libvorbis"], "ogg"),
        ("in.opus", &["-c:a", "libopus"], "opus"),
        ("in.wma", &["-c:a", "wmav2"], "wma"),
        ("in.aiff", &[], "aiff"),
        ("in.mka", &["-c:a", "libmp3lame"], "mka"),
    ];
    for (name, codecs, format) in cases {
        let s = Scratch::new();
        let input = sine(&s, 1, codecs, name);
        let c = s.convert(&input);
        assert_eq!((c.kind, c.format.as_str()), (MediaKind::Audio, *format), "{name}");
        close(c.duration.expect("duration"), 1.0, 0.1);
        assert_eq!(c.renditions.len(), 4, "{name}: original, aac, mp3, waveform");
    }
}

#[test]
fn surround_and_odd_rates_are_downmixed_and_resampled() {
    let s = Scratch::new();
    let input =
        s.ffmpeg(&["-f", "lavfi", "-i", "sine=sample_rate=96000:d=1", "-ac", "6", "-c:a", "flac"], "surround.flac");
    let c = s.convert(&input);
    let m4a = &with_role(&c, |r| *r == Role::Audio { codec: "aac" })[0].file;
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "stream=channels,sample_rate", "-of", "csv=p=0"])
        .arg(m4a)
        .output()
        .expect("ffprobe");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "48000,2");
}

#[test]
fn long_audio_is_refused() {
    let s = Scratch::new();
    let input = sine(&s, 3, &[], "in.wav");
    let limits = Limits { max_duration: std::time::Duration::from_secs(1), ..Limits::default() };
    let err = convert(&input, &s.out(), &limits, &|_| {}).expect_err("too long");
    assert!(matches!(err, MediaError::TooLong { limit, .. } if limit == 1.0), "{err}");
    assert_eq!(err.to_string(), "the media is too long: 3.0 s, at most 1 s are accepted");
}
