//! Generated test media (made by the ffmpeg CLI into a temp dir) and probes of stored
//! files (by our own engine, after downloading them from their public address).

use std::path::{Path, PathBuf};
use std::process::Command;

use reelfarm_worker::media::{self, Limits, Probe};

/// Runs `ffmpeg -y … OUT` quietly; panics with its stderr on failure.
pub fn ffmpeg(args: &[&str], out: &Path) {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .arg(out)
        .output()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(output.status.success(), "ffmpeg {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// The sound of `file` decoded by the ffmpeg CLI as mono samples (−1 to 1) at `rate` Hz.
pub fn mono_samples(file: &Path, rate: u32) -> Vec<f64> {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i"])
        .arg(file)
        .args(["-f", "s16le", "-ac", "1", "-ar", &rate.to_string(), "-"])
        .output()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout.chunks_exact(2).map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0).collect()
}

/// A 640×480 PNG whose left half is transparent.
pub fn png_with_alpha(dir: &Path) -> PathBuf {
    let out = dir.join("alpha.png");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=red:s=640x480,format=rgba,geq=r='r(X,Y)':a='if(lt(X,320),0,255)'",
            "-frames:v",
            "1",
        ],
        &out,
    );
    out
}

/// A 2400×1600 JPEG test pattern.
pub fn jpeg(dir: &Path) -> PathBuf {
    let out = dir.join("photo.jpg");
    ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=2400x1600", "-frames:v", "1", "-q:v", "3"], &out);
    out
}

/// A 1280×720, 2 s H.264/AAC MP4 with a 440 Hz tone.
pub fn mp4_with_audio(dir: &Path) -> PathBuf {
    let out = dir.join("clip.mp4");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=1280x720:r=25:d=2",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:d=2",
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
        &out,
    );
    out
}

/// A 1.5 s mono 44.1 kHz WAV tone.
pub fn wav(dir: &Path) -> PathBuf {
    let out = dir.join("tone.wav");
    ffmpeg(&["-f", "lavfi", "-i", "sine=f=440:d=1.5"], &out);
    out
}

/// A 400×200 SVG.
pub fn svg(dir: &Path) -> PathBuf {
    let out = dir.join("logo.svg");
    std::fs::write(
        &out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200"><rect x="20" y="20" width="360" height="160" rx="24" fill="#2563eb"/><circle cx="200" cy="100" r="50" fill="#facc15"/></svg>"##,
    )
    .unwrap();
    out
}

/// Downloads `url` (following a redirect to presigned storage) into `dir` and probes it.
pub async fn probe_url(url: &str, dir: &Path) -> Probe {
    let bytes = reqwest::get(url).await.unwrap().error_for_status().unwrap().bytes().await.unwrap();
    let file = dir.join(format!("probe-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, &bytes).unwrap();
    tokio::task::spawn_blocking(move || media::probe(&file, &Limits::default()))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{url} probes: {e}"))
}

/// A 100×100 Lottie animation at 10 fps, 1 s long, filled with one solid `color`
/// (`#rrggbb`) throughout.
pub fn lottie_solid(color: &str) -> serde_json::Value {
    let transform = serde_json::json!({ "o": { "a": 0, "k": 100 }, "r": { "a": 0, "k": 0 }, "p": { "a": 0, "k": [0, 0, 0] },
                                        "a": { "a": 0, "k": [0, 0, 0] }, "s": { "a": 0, "k": [100, 100, 100] } });
    serde_json::json!({
        "v": "5.7.4", "fr": 10, "ip": 0, "op": 10, "w": 100, "h": 100, "nm": "solid", "ddd": 0, "assets": [],
        "layers": [{ "ddd": 0, "ind": 1, "ty": 1, "nm": "fill", "sr": 1, "ao": 0, "ip": 0, "op": 10, "st": 0,
                     "bm": 0, "sc": color, "sw": 100, "sh": 100, "ks": transform }]
    })
}

/// A dotLottie archive `name` in `dir` holding `animation` as its one animation.
pub fn dotlottie(dir: &Path, name: &str, animation: &serde_json::Value) -> PathBuf {
    use std::io::Write;
    let out = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&out).unwrap());
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let manifest = serde_json::json!({ "version": "1", "animations": [{ "id": "main" }] });
    for (file, body) in [("manifest.json", manifest), ("animations/main.json", animation.clone())] {
        zip.start_file(file, options).unwrap();
        zip.write_all(body.to_string().as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    out
}
