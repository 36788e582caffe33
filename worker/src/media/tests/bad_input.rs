use std::io::ErrorKind;
use std::net::TcpListener;

use super::super::MediaError;
use super::*;

/// A small deterministic pseudo-random generator (xorshift).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn refuse(s: &Scratch, name: &str, content: &[u8]) -> MediaError {
    let input = s.path(name);
    std::fs::write(&input, content).expect("write");
    let probed = probe(&input, &Limits::default());
    let converted = convert(&input, &s.out(), &Limits::default(), &|_| {});
    let err = converted.expect_err("must be refused");
    assert_eq!(probed.expect_err("probe must refuse too").key(), err.key());
    assert!(!matches!(err, MediaError::Internal(_)), "{name}: {err}");
    err
}

#[test]
fn hls_playlist_is_refused_without_any_network_access() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let playlist = format!(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\nhttp://127.0.0.1:{port}/x.ts\n#EXTINF:10.0,\nfile:///etc/hostname\n#EXT-X-ENDLIST\n"
    );
    let s = Scratch::new();
    let err = refuse(&s, "video.mp4", playlist.as_bytes());
    assert!(matches!(err, MediaError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("hls"), "{err}");
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the worker connected to the playlist's URL: {other:?}"),
    }
}

#[test]
fn concat_scripts_and_other_non_media_are_refused() {
    let s = Scratch::new();
    let concat = b"ffconcat version 1.0\nfile '/etc/hostname'\nfile 'http://127.0.0.1:9/x.ts'\n";
    assert!(matches!(refuse(&s, "a", concat), MediaError::Unsupported(_)));
    assert!(matches!(refuse(&s, "b", b"just some text, not media\n"), MediaError::Unsupported(_)));
    assert!(matches!(refuse(&s, "c", b"<html><body>hi</body></html>"), MediaError::Unsupported(_)));
    let err = refuse(&s, "d", b"");
    assert_eq!(err.to_string(), "the file is damaged or incomplete: the file is empty");
    let garbage = Noise(0x9e37_79b9_7f4a_7c15).bytes(64 * 1024);
    refuse(&s, "e", &garbage);
}

#[test]
fn truncated_files_fail_with_a_readable_error() {
    let s = Scratch::new();
    let mp4 = s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=320x240:r=15:d=2", "-c:v", "libx264", "-preset", "ultrafast"],
        "in.mp4",
    );
    let data = std::fs::read(&mp4).expect("read");
    let err = refuse(&s, "cut.mp4", &data[..data.len() / 2]);
    assert!(matches!(err, MediaError::Corrupt(_)), "{err}");
    assert!(err.to_string().starts_with("the file is damaged or incomplete"), "{err}");

    let png = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240", "-frames:v", "1"], "in.png");
    let data = std::fs::read(&png).expect("read");
    let input = s.path("cut.png");
    std::fs::write(&input, &data[..data.len() / 2]).expect("write");
    let err = convert(&input, &s.out(), &Limits::default(), &|_| {}).expect_err("truncated png");
    assert!(matches!(err, MediaError::Corrupt(_)), "{err}");
}

/// Valid small files of every family, then truncated and bit-flipped copies of each:
/// every one ends as `Ok` or a `MediaError` — never a panic (which the engine would turn
/// into `Internal`) and never a hang.
#[test]
fn damaged_files_never_crash_the_converter() {
    let s = Scratch::new();
    let lavfi_v = ["-f", "lavfi", "-i", "testsrc2=s=160x120:r=10:d=1"];
    let lavfi_a = ["-f", "lavfi", "-i", "sine=d=1"];
    let mut files = vec![
        s.ffmpeg(&[&lavfi_v[..], &lavfi_a[..], &["-c:v", "libx264", "-c:a", "aac", "-shortest"]].concat(), "v.mp4"),
        s.ffmpeg(&[&lavfi_v[..], &["-c:v", "libvpx-vp9", "-deadline", "realtime"]].concat(), "v.webm"),
        s.ffmpeg(&[&lavfi_v[..], &["-c:v", "mpeg2video", "-f", "mpegts"]].concat(), "v.ts"),
        s.ffmpeg(&lavfi_a, "a.wav"),
        s.ffmpeg(&[&lavfi_a[..], &["-c:a", "libmp3lame"]].concat(), "a.mp3"),
        s.ffmpeg(&[&lavfi_a[..], &["-c:a", "flac"]].concat(), "a.flac"),
        s.ffmpeg(&[&lavfi_v[..], &["-frames:v", "1"]].concat(), "i.png"),
        s.ffmpeg(&[&lavfi_v[..], &["-frames:v", "1"]].concat(), "i.jpg"),
        s.ffmpeg(&[&lavfi_v[..], &["-frames:v", "3"]].concat(), "i.gif"),
        s.ffmpeg(&[&lavfi_v[..], &["-frames:v", "1", "-c:v", "libwebp"]].concat(), "i.webp"),
    ];
    let svg = s.path("i.svg");
    std::fs::write(
        &svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#,
    )
    .expect("svg");
    let heic = s.path("i.heic");
    std::fs::write(&heic, include_bytes!("testdata/tiny.heic")).expect("heic");
    files.extend([svg, heic]);

    let mut noise = Noise(42);
    for file in &files {
        let data = std::fs::read(file).expect("read");
        let mut variants: Vec<Vec<u8>> =
            [10, 50, 90].iter().map(|pct| data[..data.len() * pct / 100].to_vec()).collect();
        for _ in 0..3 {
            let mut flipped = data.clone();
            for _ in 0..16 {
                let at = 16 + (noise.next() as usize) % (flipped.len() - 16);
                flipped[at] ^= noise.next() as u8 | 1;
            }
            variants.push(flipped);
        }
        for (i, bytes) in variants.iter().enumerate() {
            let case = Scratch::new();
            let input = case.path("input");
            std::fs::write(&input, bytes).expect("write");
            let limits = Limits { time_limit: std::time::Duration::from_secs(60), ..Limits::default() };
            let _ = probe(&input, &limits);
            if let Err(MediaError::Internal(e)) = convert(&input, &case.out(), &limits, &|_| {}) {
                panic!("{} variant {i}: internal error {e}", file.display());
            }
        }
    }
}
