//! Text-to-speech sound values end to end, in both modes: espeak speech
//! rendered into its layer's slot, espeak voices as users write them (other
//! codes, names, variants), Polly and Google through fakes of their wire protocols, the
//! synthesis cache, long texts synthesised in pieces of whole sentences, identifiers refused naming their
//! segment, and the voice list; characters sent to paid providers metered per user
//!, speech synthesised only once every other source is in.

use std::path::Path;

use reelfarm_backends::store::{UsageStore, UserStore};
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::tts::MAX_SPEECH_PIECES;
use reelfarm_tests::google_tts::{FakeGoogleTts, API_KEY};
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::polly::FakePolly;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    an_espeak_value_renders_speech_in_its_slot_and_is_synthesised_once,
    espeak_voices_render_by_code_other_code_name_and_variant,
    polly_and_google_speak_through_their_fakes_and_long_texts_are_split,
    invalid_identifiers_are_refused_naming_the_segment,
    the_voices_of_the_configured_providers_are_listed,
    paid_speech_is_metered_once_per_synthesis_and_only_after_the_other_sources,
);

const FIRST: &str = "aaaaaaaa-1111-4111-8111-111111111111";
const SECOND: &str = "bbbbbbbb-2222-4222-8222-222222222222";

/// A 160×120, 3 s, 10 fps template with two sound variables: `first` plays from 0.5 s to
/// 1.5 s, `second` from 1.5 s to 2.5 s; their placeholders are silence.
fn template(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    media::ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "3"], &dir.join("media/silence.wav"));
    let sound = |id: &str, start: f64, end: f64, variable: &str| {
        json!({
            "id": id, "kind": "sound", "start": start, "end": end,
            "source": { "file": "media/silence.wav" },
            "variable": { "id": variable, "name": id }
        })
    };
    json!({
        "version": 1,
        "name": "Speech test",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#202020" },
        "clips": [{
            "id": "only",
            "duration": 3,
            "layers": [sound("first", 0.5, 1.5, FIRST), sound("second", 1.5, 2.5, SECOND)]
        }]
    })
}

struct World {
    app: TestApp,
    token: String,
    template: TemplateRecord,
    dir: tempfile::TempDir,
}

async fn world(mode: Mode, settings: &[(&str, &str)]) -> World {
    let app = TestApp::spawn_with(mode, settings).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("speaker", 20, dir.path(), &template(dir.path())).await;
    World { app, token, template, dir }
}

impl World {
    fn job(&self, variables: Value) -> Value {
        json!({ "template_id": self.template.id, "options": {}, "values": [{ "template_variables": variables }] })
    }

    /// Posts a job with `variables` and waits for its one video; returns the video.
    async fn render(&self, variables: Value) -> Value {
        let res = self.app.post_json("/generator/v1/jobs", &self.token, &self.job(variables), &[]).await;
        let created = json(res, 200).await;
        let job = self.app.wait_for_job(&self.token, created["id"].as_str().unwrap()).await;
        let video = job["videos"][0].clone();
        assert_eq!(video["status"], "success", "{video}");
        video
    }

    /// RMS level of the video's sound in 100 ms windows (8 kHz mono).
    async fn loudness(&self, video: &Value) -> Vec<f64> {
        let url = video["url"].as_str().unwrap();
        let bytes = reqwest::get(url).await.unwrap().error_for_status().unwrap().bytes().await.unwrap();
        let file = self.dir.path().join(format!("{}.mp4", uuid::Uuid::new_v4().simple()));
        std::fs::write(&file, &bytes).unwrap();
        let samples = media::mono_samples(&file, 8000);
        samples.chunks(800).map(|w| (w.iter().map(|s| s * s).sum::<f64>() / w.len() as f64).sqrt()).collect()
    }

    async fn metric(&self, line_start: &str) -> f64 {
        let text = reqwest::get(self.app.url("/metrics")).await.unwrap().text().await.unwrap();
        text.lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .map_or(0.0, |v| v.parse().unwrap())
    }
}

/// Whether the windows from `from` to `to` seconds are all silent (below −50 dBFS).
fn silent(levels: &[f64], from: f64, to: f64) -> bool {
    levels[(from * 10.0) as usize..(to * 10.0) as usize].iter().all(|l| *l < 0.003)
}

/// Whether most windows from `from` to `to` seconds carry sound (above −40 dBFS).
fn voiced(levels: &[f64], from: f64, to: f64) -> bool {
    let windows = &levels[(from * 10.0) as usize..(to * 10.0) as usize];
    windows.iter().filter(|l| **l > 0.01).count() * 2 >= windows.len()
}

fn espeak(text: &str) -> Value {
    json!({ "type": "tts", "value": text, "identifier": "espeak;en-us;female;en-US;none;none" })
}

async fn an_espeak_value_renders_speech_in_its_slot_and_is_synthesised_once(mode: Mode) {
    let w = world(mode, &[]).await;
    let video = w.render(json!({ FIRST: espeak("Hello there, how are you today?") })).await;
    let probe = probe_url(video["url"].as_str().unwrap(), w.dir.path()).await;
    assert!((probe.duration.unwrap() - 3.0).abs() < 0.05, "duration {:?}", probe.duration);
    assert_eq!(probe.audio_codec.as_deref(), Some("aac"));
    let levels = w.loudness(&video).await;
    assert!(silent(&levels, 0.0, 0.4), "nothing before the layer: {levels:?}");
    assert!(voiced(&levels, 0.6, 1.4), "speech in the layer's slot: {levels:?}");
    // The speech is longer than its 1 s slot: cut with a fade, nothing after the slot.
    assert!(silent(&levels, 1.7, 2.9), "nothing after the slot: {levels:?}");
    assert_eq!(w.metric("reelfarm_tts_requests_total{provider=\"espeak\"}").await, 1.0);

    // The same speech again, in the other slot: from the cache, no second synthesis.
    let video = w.render(json!({ SECOND: espeak("Hello there, how are you today?") })).await;
    let levels = w.loudness(&video).await;
    assert!(silent(&levels, 0.0, 1.4) && voiced(&levels, 1.6, 2.4) && silent(&levels, 2.7, 2.9), "{levels:?}");
    assert_eq!(w.metric("reelfarm_tts_requests_total{provider=\"espeak\"}").await, 1.0, "served from the cache");
    assert_eq!(w.metric("reelfarm_tts_cache_total{outcome=\"hit\"}").await, 1.0);
    w.app.stop().await;
}

/// A speech value of `text` with `identifier`.
fn speech(text: &str, identifier: &str) -> Value {
    json!({ "type": "tts", "value": text, "identifier": identifier })
}

async fn espeak_voices_render_by_code_other_code_name_and_variant(mode: Mode) {
    let w = world(mode, &[]).await;
    for (first, second) in [
        // `en` is espeak-ng's other code of en-gb; the language en-US shares its `en`.
        ("espeak;en;male;en-US;none;none", "espeak;en-us;male;en-US;none;none"),
        ("espeak;en-gb-x-rp;male;en-GB;none;none", "espeak;en+f3;female;en;none;none"),
    ] {
        let text = format!("Hello there, this is {first} speaking.");
        let video = w.render(json!({ FIRST: speech(&text, first), SECOND: speech(&text, second) })).await;
        let probe = probe_url(video["url"].as_str().unwrap(), w.dir.path()).await;
        assert_eq!(probe.audio_codec.as_deref(), Some("aac"));
        let levels = w.loudness(&video).await;
        assert!(silent(&levels, 0.0, 0.4), "{first}, {second}: {levels:?}");
        assert!(voiced(&levels, 0.6, 1.4), "{first}: {levels:?}");
        assert!(voiced(&levels, 1.6, 2.4), "{second}: {levels:?}");
    }
    let synthesised = w.metric("reelfarm_tts_requests_total{provider=\"espeak\"}").await;
    assert_eq!(synthesised, 4.0);
    // The voice's name, any case, is the same voice as `en`: its speech is in the cache.
    let text = "Hello there, this is espeak;en;male;en-US;none;none speaking.";
    w.render(json!({ FIRST: speech(text, "espeak;english (great britain);male;en-US;none;none") })).await;
    assert_eq!(w.metric("reelfarm_tts_requests_total{provider=\"espeak\"}").await, synthesised, "from the cache");
    w.app.stop().await;
}

/// Settings that enable Polly and Google, served by their fakes.
fn paid_providers<'a>(polly: &'a FakePolly, google: &'a FakeGoogleTts) -> [(&'static str, &'a str); 6] {
    [
        ("REELFARM_POLLY_REGION", "eu-west-1"),
        ("REELFARM_POLLY_ENDPOINT", polly.address.as_str()),
        ("REELFARM_POLLY_ACCESS_KEY_ID", "AKIDFAKE"),
        ("REELFARM_POLLY_SECRET_ACCESS_KEY", "fake-secret"),
        ("REELFARM_GOOGLE_TTS_URL", google.address.as_str()),
        ("REELFARM_GOOGLE_TTS_API_KEY", API_KEY),
    ]
}

async fn polly_and_google_speak_through_their_fakes_and_long_texts_are_split(mode: Mode) {
    let (polly, google) = (FakePolly::start().await, FakeGoogleTts::start().await);
    let w = world(mode, &paid_providers(&polly, &google)).await;
    let values = json!({
        FIRST: { "type": "tts", "value": "One two three.", "identifier": "polly;Joanna;female;en-US;neural;none" },
        SECOND: { "type": "tts", "value": "Four five six.", "identifier": "google;en-US-Neural2-C;female;;none;none" },
    });
    let video = w.render(values.clone()).await;
    let levels = w.loudness(&video).await;
    assert!(silent(&levels, 0.0, 0.4), "{levels:?}");
    assert!(voiced(&levels, 0.6, 1.3), "polly's speech: {levels:?}");
    assert!(voiced(&levels, 1.6, 2.3), "google's speech: {levels:?}");
    assert!(silent(&levels, 2.7, 2.9), "{levels:?}");
    let sent = polly.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (&sent[0]["VoiceId"], &sent[0]["Engine"], &sent[0]["OutputFormat"], &sent[0]["Text"]),
        (&json!("Joanna"), &json!("neural"), &json!("pcm"), &json!("One two three."))
    );
    let sent = google.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["voice"], json!({ "name": "en-US-Neural2-C", "languageCode": "en-US" }));
    assert_eq!(sent[0]["input"]["text"], "Four five six.");

    // Again: both from the cache.
    w.render(values).await;
    assert_eq!((polly.requests().len(), google.requests().len()), (1, 1), "no second synthesis");

    // A long text goes in pieces of whole sentences (timed one by one for captions), at
    // most about fifty, each within Polly's 3,000 characters.
    let long = "This sentence is one of many. ".repeat(120);
    w.render(json!({ FIRST: { "type": "tts", "value": long, "identifier": "polly;Matthew;male;en-US;neural;none" } }))
        .await;
    let pieces: Vec<String> = polly.requests()[1..].iter().map(|r| r["Text"].as_str().unwrap().to_string()).collect();
    assert!((2..=MAX_SPEECH_PIECES + 1).contains(&pieces.len()), "{pieces:?}");
    assert!(pieces.iter().all(|p| p.chars().count() <= 3000 && p.ends_with("many.")), "{pieces:?}");
    assert_eq!(pieces.join(" "), long.trim());

    // A provider refusing the request fails the video with its reason (voice unknown to
    // the fake), without retries.
    polly.fail_with(Some(400));
    let asked_before = polly.requests().len();
    let res = w.app.post_json("/generator/v1/jobs", &w.token, &w.job(json!({ FIRST: { "type": "tts", "value": "New words.", "identifier": "polly;Amy;female;en-GB;neural;none" } })), &[]).await;
    let created = json(res, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "failed", "{video}");
    assert!(video["error"].as_str().unwrap().contains("text-to-speech"), "{video}");
    assert_eq!(polly.requests().len(), asked_before + 1, "a refusal is not retried");
    w.app.stop().await;
}

async fn invalid_identifiers_are_refused_naming_the_segment(mode: Mode) {
    let w = world(mode, &[]).await;
    let field = format!("values[0].template_variables.{FIRST}");
    for (value, words) in [
        (
            json!({ "type": "tts", "value": "Hi.", "identifier": "azure;x;f;en-US;none;none" }),
            "segment 1 (provider): unknown provider \"azure\"",
        ),
        (
            json!({ "type": "tts", "value": "Hi.", "identifier": "espeak;xx-nope;male;;none;none" }),
            "segment 2 (voice): unknown espeak voice \"xx-nope\"; GET /generator/v1/tts/voices lists",
        ),
        (
            json!({ "type": "tts", "value": "Hi.", "identifier": "espeak;en-us+nope;female;en-US;none;none" }),
            "segment 2 (voice): unknown espeak variant \"nope\" in \"en-us+nope\"",
        ),
        (json!({ "type": "tts", "value": " ", "identifier": "espeak;en-us;;;none;none" }), "is empty"),
        (
            json!({ "type": "tts", "value": "x".repeat(20_001), "identifier": "espeak;en-us;;;none;none" }),
            "at most 20000",
        ),
        (
            json!({ "type": "tts", "value": "Hi.", "identifier": "polly;Joanna;female;en-US;neural;none" }),
            "polly is not configured",
        ),
        (
            json!({ "type": "tts", "value": "Hi.", "identifier": "espeak;en-us;;de-DE;none;none" }),
            "segment 4 (language)",
        ),
        (json!({ "type": "tts", "value": "Hi." }), "\"identifier\" is required"),
    ] {
        let res = w.app.post_json("/generator/v1/jobs", &w.token, &w.job(json!({ FIRST: value })), &[]).await;
        let body = error(res, 400, "error.validation_failed").await;
        let errors = body["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{body}");
        assert_eq!(errors[0]["field"], field.as_str(), "{body}");
        assert_eq!(errors[0]["key"], "error.invalid", "{body}");
        let message = errors[0]["message"].as_str().unwrap();
        assert!(message.contains("variable \"first\"") && message.contains(words), "{words}: {message}");
    }
    // Refused before anything was created, so nothing was synthesised either.
    assert_eq!(json(w.app.get("/generator/v1/jobs", &w.token).await, 200).await, json!([]));
    w.app.stop().await;
}

async fn the_voices_of_the_configured_providers_are_listed(mode: Mode) {
    let w = world(
        mode,
        &[
            ("REELFARM_POLLY_REGION", "eu-west-1"),
            ("REELFARM_POLLY_ACCESS_KEY_ID", "AKIDFAKE"),
            ("REELFARM_POLLY_SECRET_ACCESS_KEY", "x"),
        ],
    )
    .await;
    let listed = json(w.app.get("/generator/v1/tts/voices", &w.token).await, 200).await;
    let providers: Vec<&str> =
        listed["providers"].as_array().unwrap().iter().map(|p| p["provider"].as_str().unwrap()).collect();
    assert_eq!(providers, ["espeak", "polly"], "google is not configured: {listed}");
    let espeak = &listed["providers"][0]["voices"];
    let english = espeak.as_array().unwrap().iter().find(|v| v["voice"] == "en-us").expect("espeak's en-us voice");
    assert_eq!(english["identifier"], "espeak;en-us;male;en-us;none;none");
    // `en` reaches en-gb (espeak-ng's choice), listed with it and accepted as such.
    let by_en: Vec<&Value> = espeak.as_array().unwrap().iter().filter(|v| v["aliases"] == json!(["en"])).collect();
    assert_eq!(by_en.len(), 1, "{espeak}");
    assert_eq!(by_en[0]["identifier"], "espeak;en-gb;male;en-gb;none;none");
    let variants = listed["providers"][0]["variants"].as_array().unwrap();
    let f3 = variants.iter().find(|v| v["variant"] == "f3").expect("espeak's f3 variant");
    assert_eq!(f3["gender"], "female");
    assert!(listed["providers"][0]["note"].as_str().unwrap().contains("+VARIANT"), "{listed}");
    for identifier in [by_en[0]["identifier"].as_str().unwrap(), "espeak;en;male;en-gb;none;none", "espeak;en+f3;;;;"] {
        let value = json!({ FIRST: { "type": "tts", "value": "Hi.", "identifier": identifier } });
        let res = w.app.post_json("/generator/v1/jobs", &w.token, &w.job(value), &[]).await;
        json(res, 200).await;
    }
    let joanna = listed["providers"][1]["voices"].as_array().unwrap().iter().find(|v| v["voice"] == "Joanna").unwrap();
    assert_eq!(joanna["identifier"], "polly;Joanna;female;en-US;neural;none");
    // Every listed identifier is accepted by a job.
    let value = json!({ FIRST: { "type": "tts", "value": "Hi.", "identifier": joanna["identifier"] } });
    let res = w.app.post_json("/generator/v1/jobs", &w.token, &w.job(value), &[]).await;
    json(res, 200).await;
    let only = json(w.app.get("/generator/v1/tts/voices?provider=polly", &w.token).await, 200).await;
    assert_eq!(only["providers"].as_array().unwrap().len(), 1);
    let res = w.app.get("/generator/v1/tts/voices?provider=azure", &w.token).await;
    let body = error(res, 400, "error.invalid_request").await;
    assert!(body["message"].as_str().unwrap().contains("azure"), "{body}");
    w.app.stop().await;
}

async fn paid_speech_is_metered_once_per_synthesis_and_only_after_the_other_sources(mode: Mode) {
    let (polly, google) = (FakePolly::start().await, FakeGoogleTts::start().await);
    let w = world(mode, &paid_providers(&polly, &google)).await;
    let store = w.app.service.backends.store();
    let user = store.find_user("speaker").await.unwrap();
    let values = json!({
        FIRST: { "type": "tts", "value": "One two three.", "identifier": "polly;Joanna;female;en-US;neural;none" },
        SECOND: { "type": "tts", "value": "Four five six seven.", "identifier": "google;en-US-Neural2-C;female;;none;none" },
    });
    w.render(values.clone()).await;
    let metered = vec![("google".to_string(), 20), ("polly".to_string(), 14)];
    assert_eq!(store.tts_characters(&user.id).await.unwrap(), metered);
    // From the cache: nothing sent, nothing counted.
    w.render(values).await;
    assert_eq!(store.tts_characters(&user.id).await.unwrap(), metered, "a cache hit is not counted");
    // espeak is free: not counted.
    w.render(json!({ FIRST: espeak("Free words.") })).await;
    assert_eq!(store.tts_characters(&user.id).await.unwrap(), metered);
    let report = reelfarm_server::admin::usage::report(store, Some("speaker"), None).await.unwrap();
    let header: Vec<&str> = report.lines().next().unwrap().split('\t').collect();
    let row: Vec<&str> = report.lines().nth(1).unwrap().split('\t').collect();
    let column = header.iter().position(|h| *h == "tts_characters").expect("a tts_characters column");
    assert_eq!(row[column], "34", "{report}");

    // The other sound's address answers 404: the render fails before any speech is paid for.
    let files = reelfarm_tests::files::FileServer::start().await;
    let asked = (polly.requests().len(), google.requests().len());
    let refused = json!({
        FIRST: { "type": "tts", "value": "Never spoken.", "identifier": "polly;Joanna;female;en-US;neural;none" },
        SECOND: files.statuses("/gone.wav", &[404]),
    });
    let res = w.app.post_json("/generator/v1/jobs", &w.token, &w.job(refused), &[]).await;
    let created = json(res, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    assert_eq!(job["videos"][0]["status"], "failed", "{job}");
    assert_eq!((polly.requests().len(), google.requests().len()), asked, "no synthesis for a failing render");
    assert_eq!(store.tts_characters(&user.id).await.unwrap(), metered);
    w.app.stop().await;
}
