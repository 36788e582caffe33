//! One long video on many workers, in both modes: with a split threshold of
//! 2 s and 1 s chunks, a 6 s video is rendered as its sound, six chunks and their join by
//! two render slots (embedded) or two worker processes (distributed). The video is the one
//! a single worker makes of the same chunks (framemd5 of every frame equal, by the ffmpeg
//! CLI), within 45 dB PSNR of the unsplit render frame for frame, as long as it in frames
//! and sound; its thumbnail and progress are there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reelfarm_backends::store::{JobStore, PartKind, PartStore};
use reelfarm_domain::id::JobId;
use reelfarm_domain::template::{Source, Template};
use reelfarm_tests::{both_modes, json, media, Mode, Role, TestApp};
use reelfarm_worker::render::{self, split, Quality, RenderSettings};
use serde_json::{json, Value};

both_modes!(
    a_long_video_is_split_across_workers_and_joined_frame_exactly,
    a_cheap_long_video_is_rendered_whole_where_splitting_would_not_pay
);

/// Split after 2 s into 1 s chunks, whether or not it pays.
const SETTINGS: [(&str, &str); 4] = [
    ("REELFARM_SPLIT_AFTER", "2s"),
    ("REELFARM_SPLIT_CHUNK", "1s"),
    ("REELFARM_SPLIT_GAIN", "0"),
    ("REELFARM_WORKER_SLOTS", "2"),
];

/// 6 s at 30 fps, 640×360: a box sliding in over 3.5 s, a growing badge, a crossfade over
/// a cut and a tone under it all.
fn template() -> Value {
    json!({
        "version": 1,
        "name": "Long",
        "canvas": { "width": 640, "height": 360, "fps": 30, "background": "#203040" },
        "soundtrack": { "source": { "file": "media/tone.wav" }, "loop": true, "volume": 0.5 },
        "clips": [
            { "id": "a", "duration": 3.5, "transition": { "kind": "crossfade", "duration": 1.0 },
              "layers": [
                { "id": "box", "kind": "shape", "color": "#e0a030", "x": 0, "y": 100, "width": 160, "height": 160,
                  "animations": [{ "kind": "slide_in", "duration": 3.5, "direction": "left" }] },
                { "id": "title", "kind": "text", "text": "Chunked", "x": 200, "y": 20, "width": 400, "height": 80,
                  "font": { "family": "Liberation Sans", "size": 48, "color": "#ffffff" } }
            ] },
            { "id": "b", "duration": 3.5,
              "layers": [
                { "id": "ring", "kind": "shape", "shape": "rounded_rectangle", "radius": 40, "color": "#40c0ff", "x": 240, "y": 80, "width": 200, "height": 200,
                  "animations": [{ "kind": "scale", "from": 0.2, "to": 1.4 }] }
            ] }
        ]
    })
}

/// [`template`] imported as a public template, its tone generated in `dir`.
async fn imported(app: &TestApp, dir: &Path) -> reelfarm_domain::template::stored::TemplateRecord {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    media::ffmpeg(&["-f", "lavfi", "-i", "sine=f=523:d=2.5:sample_rate=44100"], &dir.join("media/tone.wav"));
    let file = dir.join("long.json");
    std::fs::write(&file, serde_json::to_vec(&template()).unwrap()).unwrap();
    app.import_template(&file, None, true).await
}

/// The ffmpeg CLI's `args` on `input`, its standard output.
fn ffmpeg_out(input: &Path, args: &[&str]) -> String {
    let out = Command::new("ffmpeg").args(["-v", "error", "-i"]).arg(input).args(args).output().expect("ffmpeg CLI");
    assert!(out.status.success(), "ffmpeg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The framemd5 lines of the video's frames (timestamps and checksums, no header).
fn framemd5(video: &Path) -> Vec<String> {
    let lines = ffmpeg_out(video, &["-map", "0:v", "-f", "framemd5", "-"]);
    lines.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect()
}

/// Per-frame PSNR (average over the planes) of `a` against `b`.
fn psnr(a: &Path, b: &Path, dir: &Path) -> Vec<f64> {
    let stats = dir.join("psnr.log");
    let filter = format!("[0:v][1:v]psnr=stats_file={}", stats.display());
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(a)
        .arg("-i")
        .arg(b)
        .args(["-lavfi", &filter, "-f", "null", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(stats).unwrap();
    text.lines()
        .map(|l| {
            let avg = l.split_whitespace().find_map(|f| f.strip_prefix("psnr_avg:")).expect("psnr_avg");
            if avg == "inf" {
                f64::INFINITY
            } else {
                avg.parse().unwrap()
            }
        })
        .collect()
}

/// (frames, video seconds, audio seconds) by ffprobe.
fn probe(video: &Path) -> (u64, f64, f64) {
    let run = |stream: &str, entries: &str| {
        let out = Command::new("ffprobe")
            .args(["-v", "error", "-count_frames", "-select_streams", stream, "-show_entries", entries])
            .args(["-of", "default=nw=1:nk=1"])
            .arg(video)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let video_lines = run("v:0", "stream=nb_read_frames,duration");
    let mut v = video_lines.lines();
    let (seconds, frames) = (v.next().unwrap().parse().unwrap(), v.next().unwrap().parse().unwrap());
    (frames, seconds, run("a:0", "stream=duration").trim().parse().unwrap())
}

/// The same template rendered here: whole, and split into the same chunks by one worker.
fn local_renders(document: &Value, dir: &Path) -> (PathBuf, PathBuf) {
    let template = Template::from_json(serde_json::to_vec(document).unwrap()).unwrap();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let settings = RenderSettings { quality: Quality::Default, ..RenderSettings::default() };
    let whole = dir.join("whole.mp4");
    render::render(&template, &resolve, &settings, &whole, &dir.join("whole.jpg"), &|_| {}).unwrap();
    render::forget_kept_sound();
    let frames = split::frame_count(&template, Quality::Default);
    let mut chunks = Vec::new();
    for (i, range) in split::chunks(frames, 30, 1.0).into_iter().enumerate() {
        let file = dir.join(format!("chunk-{i}.mp4"));
        split::render_frames(&template, &resolve, &settings, range.clone(), &file, &dir.join("t.jpg"), &|_| {})
            .unwrap();
        chunks.push((file, range));
    }
    let sound = dir.join("sound");
    split::render_sound(&template, &resolve, &settings, &sound).unwrap();
    let joined = dir.join("one-worker.mp4");
    split::join(&chunks, &sound, 30, &joined).unwrap();
    (whole, joined)
}

async fn a_long_video_is_split_across_workers_and_joined_frame_exactly(mode: Mode) {
    let (app, workers) = match mode {
        Mode::Embedded => (TestApp::spawn_with(mode, &SETTINGS).await, Vec::new()),
        Mode::Distributed => {
            let app = TestApp::spawn_role(mode, Role::Api, &SETTINGS).await;
            let workers = vec![app.start_worker().await, app.start_worker().await];
            (app, workers)
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let stored = imported(&app, dir.path()).await;
    let document = template();
    let user = app.create_user("lena", None, 10).await;
    let token = app.token_for(&user).await;
    let body = json!({ "template_id": stored.id, "options": {}, "values": [{ "external_id": "long" }] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let video = &done["videos"][0];
    assert_eq!(video["status"], "success", "{done}");
    assert_eq!(video["progress"], 100, "{video}");

    // Split: its sound, six chunks and the join, all done.
    let store = app.service.backends.store();
    let record = store.job(&JobId::trusted(job["id"].as_str().unwrap())).await.unwrap();
    let parts = store.render_parts(&record.renders[0].id).await.unwrap();
    let kinds: Vec<_> = parts.iter().map(|p| (p.kind, p.first_frame, p.end_frame)).collect();
    let mut expected = vec![(PartKind::Sound, 0, 180)];
    expected.extend((0..6).map(|i| (PartKind::Frames, i * 30, i * 30 + 30)));
    expected.push((PartKind::Join, 0, 180));
    assert_eq!(kinds, expected);
    assert!(parts.iter().all(|p| p.status == "done"), "{parts:?}");
    assert_eq!(record.renders[0].duration_ms, Some(6000));
    // The parts' files go once the join is recorded (just after the job shows success).
    let deadline = Instant::now() + Duration::from_secs(10);
    let files = loop {
        let files = app.service.backends.blobs().list(&format!("renders/{}/", record.id)).await.unwrap();
        if files.len() == 2 || Instant::now() > deadline {
            break files;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(files.len(), 2, "the video and its thumbnail, the parts' files removed: {files:?}");
    if mode == Mode::Distributed {
        let mut who: Vec<_> = parts.iter().filter_map(|p| p.worker.clone()).collect();
        who.sort();
        who.dedup();
        assert_eq!(who.len(), 2, "both workers took parts: {parts:?}");
    }

    let farm = dir.path().join("farm.mp4");
    let bytes = reqwest::get(video["url"].as_str().unwrap()).await.unwrap().bytes().await.unwrap();
    std::fs::write(&farm, &bytes).unwrap();
    let thumb = reqwest::get(video["thumbnail"].as_str().unwrap()).await.unwrap();
    assert_eq!(thumb.status(), 200, "the chunk with its frame uploaded the thumbnail");
    assert!(thumb.bytes().await.unwrap().starts_with(&[0xff, 0xd8]), "a JPEG");

    let (frames, video_seconds, audio_seconds) = probe(&farm);
    assert_eq!(frames, 180);
    assert!((video_seconds - 6.0).abs() < 1e-6, "video lasts {video_seconds}");
    assert!((audio_seconds - video_seconds).abs() <= 1.0 / 30.0, "sound lasts {audio_seconds}");

    let local = dir.path().to_path_buf();
    let d = document.clone();
    let (whole, one_worker) = tokio::task::spawn_blocking(move || local_renders(&d, &local)).await.unwrap();
    assert_eq!(framemd5(&farm), framemd5(&one_worker), "the same frames as one worker rendering every chunk");
    let db = psnr(&farm, &whole, dir.path());
    assert_eq!(db.len(), 180);
    let worst = db.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(worst >= 45.0, "every frame within 45 dB of the unsplit render: worst {worst:.1} dB");
    // The sound is the unsplit render's, sample for sample.
    let pcm = |file: &Path| ffmpeg_out(file, &["-map", "0:a", "-f", "md5", "-"]);
    assert_eq!(pcm(&farm), pcm(&whole));

    for (service, _dir) in workers {
        service.stop();
        service.wait().await.unwrap();
    }
    app.stop().await;
}

/// The 6 s video with the default gain: its estimate (well under a CPU-second) is less
/// than six chunks' overhead, so the worker renders it whole though two slots are free.
async fn a_cheap_long_video_is_rendered_whole_where_splitting_would_not_pay(mode: Mode) {
    let settings = &SETTINGS[..2];
    let (app, worker) = match mode {
        Mode::Embedded => (TestApp::spawn_with(mode, settings).await, None),
        Mode::Distributed => {
            let app = TestApp::spawn_role(mode, Role::Api, settings).await;
            let worker = app.start_worker().await;
            (app, Some(worker))
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let stored = imported(&app, dir.path()).await;
    let user = app.create_user("lena", None, 10).await;
    let token = app.token_for(&user).await;
    let body = json!({ "template_id": stored.id, "options": {}, "values": [{}] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    assert_eq!(done["videos"][0]["status"], "success", "{done}");
    let store = app.service.backends.store();
    let record = store.job(&JobId::trusted(job["id"].as_str().unwrap())).await.unwrap();
    assert_eq!(record.renders[0].duration_ms, Some(6000));
    assert_eq!(store.render_parts(&record.renders[0].id).await.unwrap(), Vec::new(), "rendered whole");
    if let Some((service, _dir)) = worker {
        service.stop();
        service.wait().await.unwrap();
    }
    app.stop().await;
}
