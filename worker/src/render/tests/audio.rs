use super::*;

/// A 1 kHz tone of `seconds` as WAV.
fn tone(s: &Scratch, seconds: u32, name: &str) -> PathBuf {
    s.ffmpeg(&["-f", "lavfi", "-i", &format!("sine=f=1000:d={seconds}:sample_rate=44100")], name)
}

#[test]
fn a_render_without_sound_has_a_silent_audio_stream_as_long_as_the_video() {
    let s = Scratch::new();
    let out = s
        .render(
            template(160, 90, vec![clip("c", 1.7, vec![rect("r", 0.0, 0.0, 10.0, 10.0, "#ffffff")])]),
            Quality::Default,
        )
        .expect("render");
    let (_, video, audio) = durations(&out.mp4);
    let audio = audio.expect("an audio stream");
    assert!((audio - video).abs() <= 1024.0 / 48_000.0, "audio {audio} s, video {video} s");
    let pcm = decode_audio(&out.mp4);
    let expected = 1.7 * 48_000.0;
    assert!((pcm[0].len() as f64 - expected).abs() <= 1024.0, "{} samples decoded, {expected} expected", pcm[0].len());
    assert!(rms(&pcm[0], 0.0, 1.7) < 1e-4);
}

#[test]
fn a_tone_layer_starting_at_two_seconds_is_silent_before_and_sounds_from_then() {
    let s = Scratch::new();
    tone(&s, 5, "tone.wav");
    let sound = json!({ "id": "beep", "kind": "sound", "source": { "file": "tone.wav" }, "start": 2.0, "volume": 0.5 });
    let out = s.render(template(160, 90, vec![clip("c", 3.0, vec![sound])]), Quality::Default).expect("render");
    let pcm = decode_audio(&out.mp4);
    assert!(rms(&pcm[0], 0.0, 1.9) < 1e-3, "silent before: {}", rms(&pcm[0], 0.0, 1.9));
    // lavfi's sine has amplitude 1/8; at volume 0.5, spread over two channels (−3 dB):
    // an RMS of 0.125 / √2 × 0.5 / √2 ≈ 0.031.
    assert!(rms(&pcm[0], 2.1, 2.9) > 0.025, "sounding after: {}", rms(&pcm[0], 2.1, 2.9));
    assert!(rms(&pcm[1], 2.1, 2.9) > 0.025, "on both channels");
    let onset = pcm[0].iter().position(|x| x.abs() > 0.01).expect("some sound") as f64 / 48_000.0;
    assert!((onset - 2.0).abs() <= 0.1, "the tone starts at {onset} s");
    // The stream still ends with the video.
    assert!((pcm[0].len() as f64 / 48_000.0 - 3.0).abs() <= 1024.0 / 48_000.0);
}

#[test]
fn soundtrack_fades_out_at_the_end_and_video_sound_is_mixed_in() {
    let s = Scratch::new();
    tone(&s, 1, "short.wav");
    s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=gray:s=64x64:r=10:d=2",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:d=2",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-shortest",
        ],
        "talk.mp4",
    );
    let video = json!({ "id": "v", "kind": "video", "source": { "file": "talk.mp4" }, "x": 0, "y": 0, "width": 64, "height": 64, "end": 1.0 });
    let mut t = template(64, 64, vec![clip("c", 3.0, vec![video])]);
    // The 1 s soundtrack loops across the 3 s and fades out over the last second.
    t["soundtrack"] = json!({ "source": { "file": "short.wav" }, "fade_out": 1.0, "volume": 0.3 });
    let pcm = decode_audio(&s.render(t, Quality::Default).expect("render").mp4);
    let (first, middle, last) = (rms(&pcm[0], 0.1, 0.9), rms(&pcm[0], 1.1, 1.9), rms(&pcm[0], 2.8, 2.98));
    assert!(first > middle * 1.3, "video sound adds to the first second: {first} vs {middle}");
    // 0.125 / √2 × 0.3 / √2 ≈ 0.019.
    assert!(middle > 0.015, "the soundtrack loops: {middle}");
    assert!(last < middle / 4.0, "faded out at the end: {last} vs {middle}");
}

/// The sound of a template is encoded once per process: a second render of the same sound
/// writes the kept packets and makes the same file byte for byte; a changed source, volume
/// or length is a different sound, encoded anew.
#[test]
fn a_sound_made_before_is_written_from_kept_packets_and_any_change_encodes_anew() {
    let s = Scratch::new();
    tone(&s, 2, "bed.wav");
    let with = |volume: f64, seconds: f64| {
        let mut t = template(160, 90, vec![clip("c", seconds, vec![rect("r", 0.0, 0.0, 40.0, 40.0, "#ff0000")])]);
        t["soundtrack"] = json!({ "source": { "file": "bed.wav" }, "volume": volume, "fade_out": 0.5 });
        t
    };
    let render = |t: Value| {
        let out = s.render(t, Quality::Default).expect("render");
        let source = if out.output.sound_kept { "kept" } else { "encoded" };
        (std::fs::read(&out.mp4).unwrap(), decode_audio(&out.mp4), source)
    };

    let (first, first_pcm, source) = render(with(0.5, 1.5));
    assert_eq!(source, "encoded");
    let (second, second_pcm, source) = render(with(0.5, 1.5));
    assert_eq!(source, "kept");
    assert!(first == second, "the same file byte for byte");
    assert_eq!(first_pcm, second_pcm);
    assert!(rms(&second_pcm[0], 0.2, 0.8) > 0.02, "the bed sounds");

    let (_, louder, source) = render(with(1.0, 1.5));
    assert_eq!(source, "encoded", "another volume");
    assert!(rms(&louder[0], 0.2, 0.8) > 1.5 * rms(&first_pcm[0], 0.2, 0.8));
    let (_, longer, source) = render(with(0.5, 2.0));
    assert_eq!(source, "encoded", "another length");
    assert!((longer[0].len() as f64 / 48_000.0 - 2.0).abs() <= 1024.0 / 48_000.0);

    // The same name with other bytes (a value's file, say) is another sound.
    s.ffmpeg(&["-f", "lavfi", "-i", "sine=f=440:d=2:sample_rate=44100"], "bed.wav");
    let (_, other, source) = render(with(0.5, 1.5));
    assert_eq!(source, "encoded", "other bytes under the same name");
    assert_ne!(other, first_pcm);
    let (_, _, source) = render(with(0.5, 1.5));
    assert_eq!(source, "kept");
}
