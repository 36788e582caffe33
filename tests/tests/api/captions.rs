//! Captions layers end to end, in both modes: a voice-over captioned from its
//! synthesis (each sentence a cue, its times those of the speech in the video's sound),
//! captions from an SRT or WebVTT value, an address or inline cues burned into exactly
//! the frames of their cues, the WebVTT sidecar listed as `captions_url`, and captions
//! values refused naming the variable and the line at fault.

use std::path::Path;

use reelfarm_domain::captions::{parse_vtt, Cue};
use reelfarm_tests::files::FileServer;
use reelfarm_tests::media;
use reelfarm_tests::polly::FakePolly;
use reelfarm_tests::{both_modes, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_voice_over_is_captioned_in_time_with_its_speech,
    a_polly_voice_over_is_captioned_word_by_word,
    subtitles_from_a_value_show_on_the_frames_of_their_cues,
    captions_values_are_refused_naming_the_variable_and_line,
);

const VOICE: &str = "dddddddd-4444-4444-8444-444444444444";
const NOTES: &str = "eeeeeeee-5555-4555-8555-555555555555";
const FPS: f64 = 25.0;
/// Where the voice-over starts.
const SPOKEN_AT: f64 = 0.5;

/// 320×180 at 25 fps, 6 s, dark grey: a sound variable `voice` from 0.5 s captioned by a
/// layer at the bottom, and a captions variable `notes` at the top (one default cue from
/// 0.2 s to 0.4 s); both draw white text on blue boxes.
fn template(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    media::ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "6"], &dir.join("media/silence.wav"));
    let font = json!({ "family": "Liberation Sans", "size": 16 });
    json!({
        "version": 1,
        "name": "Captions",
        "canvas": { "width": 320, "height": 180, "fps": 25, "background": "#202020" },
        "clips": [{
            "id": "only",
            "duration": 6,
            "layers": [
                {
                    "id": "voice", "kind": "sound", "start": SPOKEN_AT, "source": { "file": "media/silence.wav" },
                    "variable": { "id": VOICE, "name": "Voice-over" }
                },
                {
                    "id": "spoken", "kind": "captions", "speech": "voice", "x": 10, "y": 110, "width": 300, "height": 60,
                    "font": font, "background": "#0000ff", "highlight": "#ffff00"
                },
                {
                    "id": "notes", "kind": "captions", "x": 10, "y": 10, "width": 300, "height": 60,
                    "cues": [{ "start": 0.2, "end": 0.4, "text": "Default" }],
                    "font": font, "background": "#0000ff", "vertical_align": "top",
                    "variable": { "id": NOTES, "name": "Notes" }
                }
            ]
        }]
    })
}

fn job(template_id: &str, variables: Value) -> Value {
    json!({ "template_id": template_id, "options": {}, "values": [{ "template_variables": variables }] })
}

/// Posts a job and waits for its one video.
async fn render(app: &TestApp, token: &str, body: &Value) -> Value {
    let created = json(app.post_json("/generator/v1/jobs", token, body, &[]).await, 200).await;
    let done = app.wait_for_job(token, created["id"].as_str().unwrap()).await;
    let video = done["videos"][0].clone();
    assert_eq!(video["status"], "success", "{video}");
    video
}

async fn download(url: &str, file: &Path) -> reqwest::header::HeaderMap {
    let res = reqwest::get(url).await.unwrap().error_for_status().unwrap();
    let headers = res.headers().clone();
    std::fs::write(file, res.bytes().await.unwrap()).unwrap();
    headers
}

/// The video's sidecar: served as WebVTT, read back as cues.
async fn sidecar(video: &Value, dir: &Path) -> Vec<Cue> {
    let url = video["captions_url"].as_str().unwrap_or_else(|| panic!("no captions_url: {video}"));
    let file = dir.join("captions.vtt");
    let headers = download(url, &file).await;
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/vtt"), "{headers:?}");
    parse_vtt(&std::fs::read_to_string(&file).unwrap()).expect("a valid WebVTT file")
}

/// How many pixels of the box at `y0..y1` (full width) are caption blue, in the frame of
/// `file` that shows time `t`.
fn blue_at(file: &Path, t: f64, (y0, y1): (u32, u32)) -> usize {
    let frame = (t * FPS).floor();
    let png = file.with_extension(format!("{frame}.png"));
    let select = format!("select=eq(n\\,{frame})");
    media::ffmpeg(&["-i", file.to_str().unwrap(), "-vf", &select, "-fps_mode", "passthrough", "-frames:v", "1"], &png);
    let image = image::open(&png).unwrap().to_rgb8();
    let mut blue = 0;
    for y in y0..y1 {
        for x in 0..image.width() {
            let [r, g, b] = image.get_pixel(x, y).0;
            blue += usize::from(r < 60 && g < 60 && b > 180);
        }
    }
    blue
}

const TOP: (u32, u32) = (10, 70);
const BOTTOM: (u32, u32) = (110, 170);
/// A caption box shows when this many of its pixels are blue (a 300×60 box with a line
/// of text has thousands; compression fringes have none).
const SHOWN: usize = 500;

/// Spans of the video's sound louder than −40 dBFS, in seconds, joined across gaps
/// shorter than 0.2 s (the pauses inside a sentence; sentences are 0.3 s apart).
fn voiced_spans(file: &Path) -> Vec<(f64, f64)> {
    let samples = media::mono_samples(file, 48_000);
    let mut spans: Vec<(f64, f64)> = Vec::new();
    for (i, _) in samples.iter().enumerate().filter(|(_, s)| s.abs() > 0.01) {
        let t = i as f64 / 48_000.0;
        match spans.last_mut() {
            Some(last) if t - last.1 < 0.2 => last.1 = t,
            _ => spans.push((t, t)),
        }
    }
    spans
}

async fn a_voice_over_is_captioned_in_time_with_its_speech(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("narrator", 10, dir.path(), &template(dir.path())).await;
    let text = "Good morning everyone. Captions follow the voice.";
    let speech = json!({ VOICE: { "type": "tts", "value": text, "identifier": "espeak;en-us" } });
    let video = render(&app, &token, &job(template.id.as_str(), speech)).await;

    // One cue per sentence, on the video's timeline, with the default cue of `notes`.
    let cues = sidecar(&video, dir.path()).await;
    let texts: Vec<&str> = cues.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["Default", "Good morning everyone.", "Captions follow the voice."], "{cues:?}");
    let spoken = &cues[1..];

    // The cues are where the speech is: each sentence is one voiced span of the sound,
    // its start and end within a frame of its cue's.
    let file = dir.path().join("video.mp4");
    download(video["url"].as_str().unwrap(), &file).await;
    let spans = voiced_spans(&file);
    assert_eq!(spans.len(), 2, "two sentences, two spans of speech: {spans:?}, cues {spoken:?}");
    for (cue, (start, end)) in spoken.iter().zip(&spans) {
        assert!(cue.start >= SPOKEN_AT, "{cue:?}");
        assert!((cue.start - start).abs() <= 1.0 / FPS, "cue {cue:?} starts with the speech at {start}");
        assert!((cue.end - end).abs() <= 1.0 / FPS, "cue {cue:?} ends with the speech at {end}");
    }

    // Burned in while each sentence is spoken, absent before the speech and between them.
    for cue in spoken {
        let middle = (cue.start + cue.end) / 2.0;
        assert!(blue_at(&file, middle, BOTTOM) > SHOWN, "caption shown at {middle} s");
    }
    assert_eq!(blue_at(&file, 0.1, BOTTOM), 0, "no caption before the speech");
    let gap = (spoken[0].end + spoken[1].start) / 2.0;
    if spoken[1].start - spoken[0].end >= 2.0 / FPS {
        assert_eq!(blue_at(&file, gap, BOTTOM), 0, "no caption between the sentences at {gap} s");
    }
    assert_eq!(blue_at(&file, 5.8, BOTTOM), 0, "no caption after the speech");
    // The default cue of the other layer shows in its own box, on its own frames.
    assert!(blue_at(&file, 0.3, TOP) > SHOWN);
    assert_eq!(blue_at(&file, 1.0, TOP), 0);
}

async fn a_polly_voice_over_is_captioned_word_by_word(mode: Mode) {
    let polly = FakePolly::start().await;
    let settings = [
        ("REELFARM_POLLY_REGION", "eu-west-1"),
        ("REELFARM_POLLY_ENDPOINT", polly.address.as_str()),
        ("REELFARM_POLLY_ACCESS_KEY_ID", "AKIDFAKE"),
        ("REELFARM_POLLY_SECRET_ACCESS_KEY", "fake-secret"),
    ];
    let app = TestApp::spawn_with(mode, &settings).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("marked", 10, dir.path(), &template(dir.path())).await;
    // Words of very different lengths: shared by length, their times would differ.
    let text = "A remarkably long word. Then short ones.";
    let speech =
        json!({ VOICE: { "type": "tts", "value": text, "identifier": "polly;Joanna;female;en-US;neural;none" } });
    let video = render(&app, &token, &job(template.id.as_str(), speech.clone())).await;

    // Polly's speech marks (the fake speaks a word every 0.3 s) time each word: the
    // sidecar carries them as WebVTT timestamps.
    let cues = sidecar(&video, dir.path()).await;
    for cue in &cues[1..] {
        let words = cue.words.clone().unwrap_or_else(|| panic!("word times in {cues:?}"));
        for (k, time) in words.iter().enumerate() {
            assert!((time - (cue.start + 0.3 * k as f64)).abs() < 0.002, "word {k} of {cue:?}");
        }
    }
    let requests = polly.requests();
    let asked: Vec<(&str, &str)> =
        requests.iter().map(|r| (r["OutputFormat"].as_str().unwrap(), r["Text"].as_str().unwrap())).collect();
    let (first, second) = ("A remarkably long word.", "Then short ones.");
    assert_eq!(asked, [("pcm", first), ("pcm", second), ("json", first), ("json", second)], "audio, then marks");
    assert_eq!(requests[2]["SpeechMarkTypes"], json!(["word"]));

    // The marks are kept with the cached speech: the same value again asks Polly nothing.
    let again = render(&app, &token, &job(template.id.as_str(), speech)).await;
    assert_eq!(sidecar(&again, dir.path()).await, cues);
    assert_eq!(polly.requests().len(), 4);
}

async fn subtitles_from_a_value_show_on_the_frames_of_their_cues(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("subtitler", 10, dir.path(), &template(dir.path())).await;
    let id = template.id.as_str();
    let srt = "1\n00:00:01,000 --> 00:00:02,000\nFirst line\n\n2\n00:00:03,000 --> 00:00:04,000\nSecond <i>line</i>\n";
    let expected = [(1.0, 2.0, "First line"), (3.0, 4.0, "Second line")];
    let files = FileServer::start().await;
    let vtt = "WEBVTT\n\n00:01.000 --> 00:02.000\nFirst line\n\n00:03.000 --> 00:04.000 align:start\nSecond line\n";
    let address = files.file("/subtitles.vtt", "text/vtt", vtt.as_bytes().to_vec());
    let inline = json!([
        { "start": 1.0, "end": 2.0, "text": "First line" },
        { "start": 3.0, "end": 4.0, "text": "Second line" }
    ]);
    // To clients the variable is text holding cues (its type one of the API's four).
    let listed = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
    let notes = listed["variables"].as_array().unwrap().iter().find(|v| v["id"] == NOTES).unwrap();
    assert_eq!((&notes["type"], &notes["format"]), (&json!("text"), &json!("captions")), "{notes}");
    // As such it takes the file's text as it is; the address of one; or the cues.
    for value in [json!(srt), json!(address), inline] {
        let video = render(&app, &token, &job(id, json!({ NOTES: value }))).await;
        let cues = sidecar(&video, dir.path()).await;
        let got: Vec<(f64, f64, &str)> = cues.iter().map(|c| (c.start, c.end, c.text.as_str())).collect();
        assert_eq!(got, expected, "{value}");
        let file = dir.path().join("video.mp4");
        download(video["url"].as_str().unwrap(), &file).await;
        for (t, shown) in [(0.3, false), (0.96, false), (1.04, true), (1.5, true), (1.96, true), (2.04, false)] {
            assert_eq!(blue_at(&file, t, TOP) > SHOWN, shown, "{value}: at {t} s");
        }
        assert!(blue_at(&file, 3.5, TOP) > SHOWN, "{value}");
        assert_eq!(blue_at(&file, 4.5, TOP), 0, "{value}");
    }
    assert_eq!(files.hits("/subtitles.vtt"), 1);

    // Asked for, the cues also ride along as a subtitle track players can turn on.
    let body = json!({ "template_id": id, "options": { "subtitles": true }, "values": [{}] });
    let video = render(&app, &token, &body).await;
    let file = dir.path().join("subtitled.mp4");
    download(video["url"].as_str().unwrap(), &file).await;
    let probe = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name", "-of", "csv=p=0"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "mov_text");
}

async fn captions_values_are_refused_naming_the_variable_and_line(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("typo", 10, dir.path(), &template(dir.path())).await;
    let id = template.id.as_str();
    let field = format!("values[0].template_variables.{NOTES}");
    let cases = [
        (json!({ "type": "captions", "value": "1\n00:00:01,000 -> 00:00:02,000\nHi\n" }), "line 2"),
        (json!({ "type": "captions", "value": "WEBVTT\n\n00:02.000 --> 00:01.000\nBackwards\n" }), "line 3"),
        (json!([{ "start": 2.0, "end": 1.0, "text": "Backwards" }]), "cue 0 ends"),
        (json!("not-an-address"), "line 1"),
        (json!("https://files.example/subtitles.mp4"), ".mp4"),
    ];
    for (value, said) in cases {
        let res = app.post_json("/generator/v1/jobs", &token, &job(id, json!({ NOTES: value })), &[]).await;
        let refused = json(res, 400).await;
        let problem = refused["errors"].as_array().unwrap().iter().find(|e| e["field"] == field.as_str());
        let message = problem.and_then(|p| p["message"].as_str()).unwrap_or_else(|| panic!("{value}: {refused}"));
        assert!(message.contains(said), "{value}: {message}");
    }
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 10);
}
