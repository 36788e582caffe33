//! Fuzzing the upload and render paths, in both modes: seed files of every format we
//! accept (made small by the ffmpeg CLI and our own writers), mutated by a seeded
//! generator (bytes flipped, cut short, chunks repeated, runs overwritten, random bytes
//! inserted), each uploaded and converted in its sandbox, then played from an address by
//! a template's layer of its kind and rendered in its sandbox. Every case settles,
//! finished or failed with a reason that is not ours, within its bound, while another
//! account is answered.
//!
//! `REELFARM_FUZZ_CASES` sets how many cases (default 28: the slice CI runs; the full run
//! of docs/security.md takes 2,000), `REELFARM_FUZZ_SEED` the generator's seed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reelfarm_tests::files::FileServer;
use reelfarm_tests::{both_modes, json, media, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(mutated_uploads_of_every_format_settle_alone_within_their_bound);

/// A small, fast generator (xorshift64*): the same seed gives the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One seed file of each format an upload may be.
fn seeds(dir: &Path) -> Vec<PathBuf> {
    let lavfi = |name: &str, args: &[&str]| {
        let out = dir.join(name);
        media::ffmpeg(args, &out);
        out
    };
    let picture = ["-f", "lavfi", "-i", "testsrc2=s=96x64", "-frames:v", "1"];
    let moving = ["-f", "lavfi", "-i", "testsrc2=s=96x64:d=0.5:r=10", "-f", "lavfi", "-i", "sine=d=0.5"];
    let sound = ["-f", "lavfi", "-i", "sine=f=440:d=0.5"];
    let mut seeds = vec![
        lavfi("seed.png", &picture),
        lavfi("seed.jpg", &picture),
        lavfi("seed.gif", &["-f", "lavfi", "-i", "testsrc2=s=48x32:d=0.3:r=10"]),
        lavfi("seed.webp", &picture),
        lavfi("seed.mp4", &[&moving[..], &["-c:v", "libx264", "-c:a", "aac", "-shortest"]].concat()),
        lavfi("seed.mov", &[&moving[..], &["-c:v", "libx264", "-c:a", "aac", "-shortest"]].concat()),
        lavfi("seed.webm", &[&moving[..], &["-c:v", "libvpx-vp9", "-c:a", "libopus", "-shortest"]].concat()),
        lavfi("seed.mp3", &sound),
        lavfi("seed.wav", &sound),
        lavfi("seed.m4a", &[&sound[..], &["-c:a", "aac"]].concat()),
        lavfi("seed.opus", &[&sound[..], &["-c:a", "libopus"]].concat()),
        media::svg(dir),
        media::dotlottie(dir, "seed.lottie", &media::lottie_solid("#10a0f0")),
    ];
    let lottie = dir.join("seed.json");
    std::fs::write(&lottie, media::lottie_solid("#f0a010").to_string()).unwrap();
    seeds.push(lottie);
    let heic = dir.join("seed.heic");
    std::fs::write(&heic, include_bytes!("../../../worker/src/media/tests/testdata/tiny.heic")).unwrap();
    seeds.push(heic);
    seeds
}

/// `bytes` with one to eight mutations.
fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..=rng.below(8) {
        if out.is_empty() {
            out.push(rng.next() as u8);
        }
        let at = rng.below(out.len());
        match rng.below(6) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => out.truncate(at.max(1)),
            2 => {
                let end = (at + 1 + rng.below(256)).min(out.len());
                let chunk = out[at..end].to_vec();
                let times = 1 + rng.below(16);
                for _ in 0..times {
                    out.splice(at..at, chunk.iter().copied());
                }
            }
            3 => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                out[at..end].fill(0xff);
            }
            4 => {
                let random: Vec<u8> = (0..1 + rng.below(32)).map(|_| rng.next() as u8).collect();
                out.splice(at..at, random);
            }
            _ => {
                // A large number where a size or count may be.
                let end = (at + 4).min(out.len());
                out[at..end].copy_from_slice(&[0x7f, 0xff, 0xff, 0xf0][..end - at]);
            }
        }
    }
    out
}

/// A 64×64 template at 5 fps of one second whose one layer plays the file at `url` as
/// its format's kind: a picture, a video, a sound or a Lottie animation.
fn playing(name: &str, url: &str) -> Value {
    let kind = match name.rsplit('.').next() {
        Some("mp4" | "mov" | "webm") => "video",
        Some("mp3" | "wav" | "m4a" | "opus") => "sound",
        Some("json" | "lottie") => "lottie",
        _ => "image",
    };
    let mut layer = json!({ "id": "fuzzed", "kind": kind, "source": { "url": url } });
    if kind != "sound" {
        for (key, value) in [("x", 0), ("y", 0), ("width", 64), ("height", 64)] {
            layer[key] = json!(value);
        }
    }
    json!({ "version": 1, "name": "Fuzzed", "canvas": { "width": 64, "height": 64, "fps": 5 },
            "clips": [{ "id": "c", "duration": 1, "layers": [layer] }] })
}

/// Whether a failure's `reason` is given and is not ours.
fn settled_alone(reason: &str) -> bool {
    !reason.is_empty() && !reason.contains("on our side")
}

async fn mutated_uploads_of_every_format_settle_alone_within_their_bound(mode: Mode) {
    let cases: usize = std::env::var("REELFARM_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(28);
    let seed: u64 = std::env::var("REELFARM_FUZZ_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(58);
    // The conversion's bound: what a case may take in its sandbox.
    let bound = Duration::from_secs(30);
    let app = TestApp::spawn_with(mode, &[("REELFARM_JOB_TIMEOUT", "30s")]).await;
    let fuzzer = app.create_user("fuzzer", None, cases as i64).await;
    let token = app.token_for(&fuzzer).await;
    let files = FileServer::start().await;
    let (_, neighbour) = app.user_with_token("neighbour").await;
    let dir = tempfile::tempdir().unwrap();
    let seeds = seeds(dir.path());
    let originals: Vec<Vec<u8>> = seeds.iter().map(|s| std::fs::read(s).unwrap()).collect();
    let mut rng = Rng(seed.max(1));
    let (mut finished, mut failed, mut slowest) = (0, 0, Duration::ZERO);
    let (mut rendered, mut refused) = (0, 0);
    for case in 0..cases {
        let which = case % seeds.len();
        let name = seeds[which].file_name().unwrap().to_str().unwrap();
        let file = dir.path().join(format!("case-{case}-{name}"));
        let mutated = mutate(&originals[which], &mut rng);
        std::fs::write(&file, &mutated).unwrap();
        let started = Instant::now();
        let record = app.upload(&token, None, &file, "application/octet-stream").await;
        let asked = Instant::now();
        json(app.get("/generator/v1/templates", &neighbour).await, 200).await;
        assert!(asked.elapsed() < Duration::from_secs(1), "case {case}: the neighbour waited {:?}", asked.elapsed());
        let asset = app.wait_for_asset(&token, record["id"].as_str().unwrap()).await;
        let took = started.elapsed();
        assert!(took < bound + Duration::from_secs(10), "case {case} ({name}) took {took:?}");
        slowest = slowest.max(took);
        match asset["status"].as_str() {
            Some("finished") => finished += 1,
            _ => {
                let reason = asset["error"].as_str().unwrap_or_default();
                assert!(settled_alone(reason), "case {case} ({name}) failed without a reason of its own: {asset}");
                failed += 1;
            }
        }
        std::fs::remove_file(&file).unwrap();

        // The same bytes played from an address by a template's layer, rendered.
        let url = files.file(&format!("/case-{case}-{name}"), "application/octet-stream", mutated);
        let document = json!({ "json": playing(name, &url) });
        let template = json(app.post_json("/generator/v1/templates", &token, &document, &[]).await, 200).await;
        let body = json!({ "template_id": template["id"], "options": {}, "values": [{}] });
        let started = Instant::now();
        let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
        let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
        let took = started.elapsed();
        assert!(took < bound + Duration::from_secs(10), "case {case} ({name}) rendered in {took:?}");
        slowest = slowest.max(took);
        let video = &done["videos"][0];
        match video["status"].as_str() {
            Some("success") => rendered += 1,
            _ => {
                let reason = video["error"].as_str().unwrap_or_default();
                assert!(settled_alone(reason), "case {case} ({name}) rendered without a reason of its own: {done}");
                refused += 1;
            }
        }
    }
    eprintln!(
        "fuzz ({mode:?}, seed {seed}): {cases} cases; uploads {finished} finished, {failed} failed; renders \
         {rendered} made, {refused} failed; slowest {slowest:?}"
    );
    app.stop().await;
}
