//! Sound worth publishing.
//! - Loops stay in time: a 150 s video of a 2 s clip that flashes white on its first
//!   frame, looping, under three looping 2 s sounds with a 50 ms beep at their start (AAC
//!   at 44.1 kHz with its encoder padding, MP3 with its LAME header, Opus with its
//!   pre-skip); the last beeps start with the last flash (74 passes later), rendered whole
//!   and split across workers.
//! - Loudness to a target: a quiet source (−35 LUFS, with 1 ms bursts 20 dB over it)
//!   and a loud one (a −6 LUFS chord) both come out at −14 LUFS ± 0.5 LU with their
//!   true peak at most −1 dBTP, measured by the ffmpeg CLI's `ebur128` filter; a job's
//!   `options.loudness` wins over the template's.
//! - Music ducks under speech: a soundtrack with `duck` is lowered by its decibels while a
//!   voice layer plays, with ramps and no step; a `duck` out of range is refused naming
//!   its field.

use std::path::Path;
use std::process::Command;

use reelfarm_backends::store::RenderStore;
use reelfarm_domain::id::RenderId;
use reelfarm_domain::job::RenderRecord;
use reelfarm_domain::template::{Source, Template};
use reelfarm_tests::{both_modes, json, media, Mode, Role, TestApp};
use reelfarm_worker::render::{self, Quality, RenderSettings};
use serde_json::{json, Value};

both_modes!(
    looping_sounds_stay_in_time_with_a_looping_picture,
    quiet_and_loud_sound_come_out_at_the_loudness_target_under_the_ceiling,
    music_ducks_under_speech_by_its_decibels_without_clicks
);

/// Split after 60 s into 50 s chunks, paying or not: the 150 s video is three chunks and
/// its sound.
const SPLIT: [(&str, &str); 4] = [
    ("REELFARM_SPLIT_AFTER", "60s"),
    ("REELFARM_SPLIT_CHUNK", "50s"),
    ("REELFARM_SPLIT_GAIN", "0"),
    ("REELFARM_WORKER_SLOTS", "2"),
];

const FPS: f64 = 30.0;
const SECONDS: f64 = 150.0;

/// The beeps: (file, encoder arguments, sample rate, tone in Hz).
const BEEPS: [(&str, &[&str], u32, f64); 3] = [
    ("aac.m4a", &["-c:a", "aac"], 44_100, 1000.0),
    ("mp3.mp3", &["-c:a", "libmp3lame"], 44_100, 2500.0),
    ("opus.opus", &["-c:a", "libopus"], 48_000, 6000.0),
];

/// The flash video and the three beeps in `dir/media`.
fn make_media(dir: &Path) {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    let flash =
        ["-f", "lavfi", "-i", "color=black:s=160x90:r=30:d=2", "-vf", "drawbox=c=white:t=fill:enable='lt(n,1)'"];
    media::ffmpeg(&[&flash[..], &["-c:v", "libx264", "-pix_fmt", "yuv420p"]].concat(), &dir.join("media/flash.mp4"));
    for (file, codec, rate, tone) in BEEPS {
        let beep = format!("sine=f={tone}:d=0.05:sample_rate={rate}");
        let args = [&["-f", "lavfi", "-i", &beep, "-af", "apad=whole_dur=2"][..], codec].concat();
        media::ffmpeg(&args, &dir.join("media").join(file));
    }
}

fn template() -> Value {
    let mut layers = vec![json!({ "id": "flash", "kind": "video", "x": 0, "y": 0, "width": 160, "height": 90,
                                  "source": { "file": "media/flash.mp4" }, "loop": true, "mute": true })];
    for (file, _, _, _) in BEEPS {
        layers.push(
            json!({ "id": file.replace('.', "-"), "kind": "sound", "source": { "file": format!("media/{file}") },
                            "loop": true, "volume": 0.3 }),
        );
    }
    json!({ "version": 1, "name": "Loops", "canvas": { "width": 160, "height": 90, "fps": 30 },
            "clips": [{ "id": "only", "duration": SECONDS, "layers": layers }] })
}

/// Seconds of the last flash: the last frame brighter than mid-grey.
fn last_flash(video: &Path) -> f64 {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(video)
        .args(["-vf", "scale=1:1", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let frame = out.stdout.iter().rposition(|&luma| luma > 128).expect("a flash");
    frame as f64 / FPS
}

/// Seconds at which the beep of `tone` starts in `samples` (48 kHz) within one second
/// before `near`: the first millisecond whose power at `tone` (Goertzel) reaches a
/// quarter of the loudest in that second.
fn beep_onset(samples: &[f64], tone: f64, near: f64) -> f64 {
    const BLOCK: usize = 48;
    let power = |block: &[f64]| {
        let k = 2.0 * (2.0 * std::f64::consts::PI * tone / 48_000.0).cos();
        let (mut s1, mut s2) = (0.0, 0.0);
        for x in block {
            (s1, s2) = (x + k * s1 - s2, s1);
        }
        s1 * s1 + s2 * s2 - k * s1 * s2
    };
    let from = ((near - 1.0) * 48_000.0) as usize;
    let to = ((near + 0.5) * 48_000.0) as usize;
    let powers: Vec<f64> = samples[from..to].chunks(BLOCK).map(power).collect();
    let loudest = powers.iter().copied().fold(0.0, f64::max);
    let first = powers.iter().position(|p| *p >= loudest / 4.0).unwrap();
    (from + first * BLOCK) as f64 / 48_000.0
}

/// Every beep of `video` starts with the last flash (within 5 ms, where one frame is 33 ms;
/// the beeps are found to the millisecond).
fn assert_in_time(video: &Path, what: &str) {
    let flash = last_flash(video);
    assert!((flash - (SECONDS - 2.0)).abs() < 0.5 / FPS, "{what}: the last flash at {flash} s");
    let samples = media::mono_samples(video, 48_000);
    for (file, _, _, tone) in BEEPS {
        let onset = beep_onset(&samples, tone, flash);
        assert!((onset - flash).abs() <= 0.005, "{what}: the {file} beep at {onset} s, the flash at {flash} s");
    }
}

/// `document` imported as a public template (its `file` sources beside it in `dir`).
async fn import(app: &TestApp, dir: &Path, name: &str, document: &Value) -> reelfarm_domain::id::TemplateId {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, serde_json::to_vec(document).unwrap()).unwrap();
    app.import_template(&file, None, true).await.id
}

/// The video of a job of `template` with `options`, rendered and downloaded to `out`; its
/// record.
async fn rendered(
    app: &TestApp,
    token: &str,
    template: &impl serde::Serialize,
    options: Value,
    out: &Path,
) -> RenderRecord {
    let body = json!({ "template_id": template, "options": options, "values": [{}] });
    let job = json(app.post_json("/generator/v1/jobs", token, &body, &[]).await, 200).await;
    let done = app.wait_for_job(token, job["id"].as_str().unwrap()).await;
    let video = &done["videos"][0];
    assert_eq!(video["status"], "success", "{done}");
    let bytes = reqwest::get(video["url"].as_str().unwrap()).await.unwrap().bytes().await.unwrap();
    std::fs::write(out, &bytes).unwrap();
    let id = RenderId::parse(video["id"].as_str().unwrap()).unwrap();
    app.service.backends.store().render(&id).await.unwrap()
}

async fn looping_sounds_stay_in_time_with_a_looping_picture(mode: Mode) {
    let (app, _worker) = match mode {
        Mode::Embedded => (TestApp::spawn_with(mode, &SPLIT).await, None),
        Mode::Distributed => {
            let app = TestApp::spawn_role(mode, Role::Api, &SPLIT).await;
            let worker = app.start_worker().await;
            (app, Some(worker))
        }
    };
    let dir = tempfile::tempdir().unwrap();
    make_media(dir.path());
    let document = template();
    let id = import(&app, dir.path(), "loops", &document).await;
    let user = app.create_user("lou", None, 10).await;
    let token = app.token_for(&user).await;
    let split = dir.path().join("split.mp4");
    let joined = rendered(&app, &token, &id, json!({}), &split).await.sound_level.expect("a measured sound");
    assert_in_time(&split, "split");

    // The same template in one piece, by the renderer here.
    let local = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let template = Template::from_json(serde_json::to_vec(&document).unwrap()).unwrap();
        let resolve = |source: &Source| match source {
            Source::File { file } => Some(local.join(file)),
            _ => None,
        };
        let settings = RenderSettings { quality: Quality::Default, ..RenderSettings::default() };
        let whole = local.join("whole.mp4");
        let output = render::render(&template, &resolve, &settings, &whole, &local.join("whole.jpg"), &|_| {}).unwrap();
        assert_in_time(&whole, "whole");
        // The sound mixed once for the chunks measures as the whole render's.
        let level = output.sound_level.expect("a measured sound");
        let apart = (level.loudness - joined.loudness).abs().max((level.true_peak - joined.true_peak).abs());
        assert!(apart < 0.002, "whole {level:?}, joined {joined:?}");
    })
    .await
    .unwrap();
    app.stop().await;
}

/// The level in decibels of `tone` in each block of `block` samples of `samples`
/// (48 kHz; Goertzel: exact for tones with a whole number of periods in a block).
fn levels(samples: &[f64], tone: f64, block: usize) -> Vec<f64> {
    let k = 2.0 * (2.0 * std::f64::consts::PI * tone / 48_000.0).cos();
    let power = |block: &[f64]| {
        let (mut s1, mut s2) = (0.0, 0.0);
        for x in block {
            (s1, s2) = (x + k * s1 - s2, s1);
        }
        s1 * s1 + s2 * s2 - k * s1 * s2
    };
    samples.chunks_exact(block).map(|b| 10.0 * (power(b) + 1e-12).log10()).collect()
}

/// The mean level of the blocks of `levels` between `from` and `to` seconds.
fn mean_level(levels: &[f64], block_seconds: f64, from: f64, to: f64) -> f64 {
    let picked = &levels[(from / block_seconds) as usize..(to / block_seconds) as usize];
    picked.iter().sum::<f64>() / picked.len() as f64
}

async fn music_ducks_under_speech_by_its_decibels_without_clicks(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("media")).unwrap();
    // Music at 400 Hz and a "voice" at 3 kHz: whole periods in 10 ms, told apart exactly.
    media::ffmpeg(&["-f", "lavfi", "-i", "sine=f=400:d=3:sample_rate=48000"], &dir.path().join("media/music.wav"));
    media::ffmpeg(&["-f", "lavfi", "-i", "sine=f=3000:d=2:sample_rate=48000"], &dir.path().join("media/voice.wav"));
    let duck = json!({ "db": 12, "attack": 0.15, "release": 0.4 });
    let document = json!({
        "version": 1, "name": "Ducked", "canvas": { "width": 160, "height": 90, "fps": 25 },
        "soundtrack": { "source": { "file": "media/music.wav" }, "volume": 0.5, "duck": duck },
        "clips": [{ "id": "only", "duration": 7, "layers": [
            { "id": "voice", "kind": "sound", "start": 2.5, "end": 4.5, "voice": true,
              "source": { "file": "media/voice.wav" }, "volume": 0.5 }
        ] }]
    });
    let id = import(&app, dir.path(), "ducked", &document).await;
    let user = app.create_user("dee", None, 10).await;
    let token = app.token_for(&user).await;
    let video = dir.path().join("ducked.mp4");
    rendered(&app, &token, &id, json!({}), &video).await;
    let samples = media::mono_samples(&video, 48_000);

    // 12 dB lower while the voice speaks (2.5 to 4.5 s) than before and after it.
    let music = levels(&samples, 400.0, 4_800);
    let before = mean_level(&music, 0.1, 0.5, 2.2);
    let during = mean_level(&music, 0.1, 2.6, 4.4);
    let after = mean_level(&music, 0.1, 5.2, 6.8);
    assert!((before - during - 12.0).abs() <= 1.0, "ducked by {} dB", before - during);
    assert!((before - after).abs() <= 1.0, "back up after the release: {before} then {after} dB");
    // Going down and back up in steps no larger than the ramps allow: in 10 ms, at most
    // 12 dB × 10/150 (the attack) and a little for the measure.
    let fine = levels(&samples, 400.0, 480);
    let steps = fine[(2.0 / 0.01) as usize..(5.2 / 0.01) as usize].windows(2).map(|w| (w[1] - w[0]).abs());
    let largest = steps.fold(0.0, f64::max);
    assert!(largest <= 12.0 * 10.0 / 150.0 + 0.5, "a step of {largest} dB in 10 ms");

    // A duck that would not lower anything is refused, naming its field.
    let mut bad = document.clone();
    bad["soundtrack"]["duck"]["db"] = json!(0);
    bad["soundtrack"]["source"] = json!({ "url": "https://media.example.com/music.mp3" });
    bad["clips"][0]["layers"][0]["source"] = json!({ "url": "https://media.example.com/voice.mp3" });
    let refused = json(app.post_json("/generator/v1/templates", &token, &json!({ "json": bad }), &[]).await, 400).await;
    assert_eq!(refused["errors"][0]["field"], "json.soundtrack.duck.db", "{refused}");
    app.stop().await;
}

/// Integrated loudness (LUFS) and true peak (dBTP) of `file` by the ffmpeg CLI.
fn loudness_of(file: &Path) -> (f64, f64) {
    let out = Command::new("ffmpeg")
        .args(["-nostats", "-i"])
        .arg(file)
        .args(["-af", "ebur128=peak=true", "-f", "null", "-"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = log.rsplit("Summary:").next().unwrap();
    let value = |label: &str| -> f64 {
        let line = summary.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{summary}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (value("I:"), value("Peak:"))
}

async fn quiet_and_loud_sound_come_out_at_the_loudness_target_under_the_ceiling(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("media")).unwrap();
    let quiet = [
        "-f",
        "lavfi",
        "-i",
        "sine=f=440:d=4:sample_rate=48000,volume=-33dB",
        "-f",
        "lavfi",
        "-i",
        "aevalsrc='if(lt(mod(t,1),0.001),0.3*sin(2*PI*3000*t),0)':d=4:s=48000",
        "-filter_complex",
        "amix=inputs=2:normalize=0",
    ];
    media::ffmpeg(&quiet, &dir.path().join("media/quiet.wav"));
    let loud =
        ["-f", "lavfi", "-i", "aevalsrc='0.3*sin(2*PI*220*t)+0.3*sin(2*PI*330*t)+0.3*sin(2*PI*495*t)':d=4:s=48000"];
    media::ffmpeg(&loud, &dir.path().join("media/loud.wav"));
    let user = app.create_user("lu", None, 10).await;
    let token = app.token_for(&user).await;
    let mut loud = None;
    for name in ["quiet", "loud"] {
        let document = json!({
            "version": 1, "name": name, "canvas": { "width": 160, "height": 90, "fps": 25 }, "loudness": -14,
            "soundtrack": { "source": { "file": format!("media/{name}.wav") } },
            "clips": [{ "id": "only", "duration": 4, "layers": [
                { "id": "ground", "kind": "shape", "x": 0, "y": 0, "width": 160, "height": 90, "color": "#203040" }
            ] }]
        });
        let id = import(&app, dir.path(), name, &document).await;
        let video = dir.path().join(format!("{name}.mp4"));
        let record = rendered(&app, &token, &id, json!({}), &video).await;
        loud = Some(id);
        let (source, _) = loudness_of(&dir.path().join(format!("media/{name}.wav")));
        let (loudness, peak) = loudness_of(&video);
        assert!((loudness + 14.0).abs() <= 0.5, "{name} ({source} LUFS) came out at {loudness} LUFS");
        assert!(peak <= -1.0, "{name}: a true peak of {peak} dBTP");
        // The render keeps what its mix measured (shown on the job page).
        let level = record.sound_level.expect("a measured sound");
        assert!((level.loudness + 14.0).abs() <= 0.1 && level.true_peak <= -1.4, "{name}: {level:?}");
    }

    // A job's own target over the template's (broadcast, −23 LUFS); one it cannot have is
    // refused naming the field.
    let template_id = loud.expect("imported");
    let video = dir.path().join("broadcast.mp4");
    rendered(&app, &token, &template_id, json!({ "loudness": -23 }), &video).await;
    let (loudness, _) = loudness_of(&video);
    assert!((loudness + 23.0).abs() <= 0.5, "the job's -23 LUFS came out at {loudness} LUFS");
    let body = json!({ "template_id": template_id, "options": { "loudness": -2 }, "values": [{}] });
    let refused = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 400).await;
    assert_eq!(refused["errors"][0]["field"], "options.loudness", "{refused}");
    app.stop().await;
}
