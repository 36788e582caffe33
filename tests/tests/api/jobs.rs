//! Jobs end to end (spec §4.7, §7), in both modes: videos rendered from a template with
//! text, addresses, assets and placeholders; credits taken atomically and refunded;
//! idempotent retries; validation naming every field.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reelfarm_backends::store::{OutboxStore, RenderStore};
use reelfarm_domain::id::RenderId;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_tests::files::FileServer;
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_job_renders_every_value_with_urls_assets_placeholders_and_rich_text,
    each_quality_sets_the_shorter_side,
    concurrent_jobs_never_spend_more_credits_than_there_are,
    a_failing_address_fails_its_video_and_refunds_the_credit,
    a_render_that_keeps_failing_is_given_up_dead_lettered_and_refunded,
    a_value_above_the_configured_image_limit_fails_naming_its_layer,
    idempotency_keys_replay_the_first_response_without_charging,
    every_invalid_field_is_named_in_one_answer,
    projects_store_the_template_with_the_values_applied,
    a_hostile_text_value_is_refused_at_once_and_holds_up_nothing,
    a_templates_sound_is_encoded_once_for_the_whole_fleet,
);

const URL_PHOTO: &str = "11111111-1111-4111-8111-111111111111";
const ASSET_PHOTO: &str = "22222222-2222-4222-8222-222222222222";
const NULL_PHOTO: &str = "33333333-3333-4333-8333-333333333333";
const HEADLINE: &str = "44444444-4444-4444-8444-444444444444";

/// A solid-colour 200×200 PNG.
fn png(dir: &Path, name: &str, color: &str) -> PathBuf {
    let out = dir.join(name);
    media::ffmpeg(&["-f", "lavfi", "-i", &format!("color=c={color}:s=200x200"), "-frames:v", "1"], &out);
    out
}

/// A 320×240, 1.5 s, 10 fps template: three 100×100 image variables side by side (green
/// placeholders), a single-line text variable (1–40 characters) and a tone soundtrack.
fn template(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    png(&dir.join("media"), "green.png", "0x00ff00");
    media::ffmpeg(&["-f", "lavfi", "-i", "sine=f=440:d=2"], &dir.join("media/tone.wav"));
    let image = |id: &str, x: u32, variable: &str| {
        json!({
            "id": id, "kind": "image", "x": x, "y": 10, "width": 100, "height": 100,
            "source": { "file": "media/green.png" },
            "variable": { "id": variable, "name": id, "weight": 1 }
        })
    };
    json!({
        "version": 1,
        "name": "Jobs test",
        "canvas": { "width": 320, "height": 240, "fps": 10, "background": "#000000" },
        "soundtrack": { "source": { "file": "media/tone.wav" }, "volume": 0.8 },
        "clips": [{
            "id": "only",
            "duration": 1.5,
            "layers": [
                image("url_photo", 0, URL_PHOTO),
                image("asset_photo", 110, ASSET_PHOTO),
                image("null_photo", 220, NULL_PHOTO),
                {
                    "id": "headline", "kind": "text", "x": 10, "y": 150, "width": 300, "height": 60,
                    "text": "Default headline",
                    "font": { "family": "Liberation Sans", "size": 24, "color": "#ffffff" },
                    "multiline": false, "minimum_length": 1, "maximum_length": 40,
                    "variable": { "id": HEADLINE, "name": "Headline", "weight": 2 }
                }
            ]
        }]
    })
}

/// The test's world: a running app, a user with credits, an imported template.
struct World {
    app: TestApp,
    token: String,
    template: TemplateRecord,
    files: FileServer,
    dir: tempfile::TempDir,
}

async fn world(mode: Mode, credits: i64) -> World {
    world_with(mode, credits, &[]).await
}

async fn world_with(mode: Mode, credits: i64, settings: &[(&str, &str)]) -> World {
    let app = TestApp::spawn_with(mode, settings).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("maker", credits, dir.path(), &template(dir.path())).await;
    let files = FileServer::start().await;
    World { app, token, template, files, dir }
}

impl World {
    async fn post_job(&self, body: &Value) -> reqwest::Response {
        self.app.post_json("/generator/v1/jobs", &self.token, body, &[]).await
    }

    async fn credits(&self) -> i64 {
        json(self.app.get("/generator/v1/users/me/credits", &self.token).await, 200).await["credits"].as_i64().unwrap()
    }

    fn job(&self, quality: &str, values: Value) -> Value {
        json!({ "template_id": self.template.id, "options": { "quality": quality }, "values": values })
    }
}

/// The RGB of the pixel at (x, y) of a JPEG at `url`.
async fn pixel(url: &str, x: u32, y: u32) -> [u8; 3] {
    let bytes = reqwest::get(url).await.unwrap().error_for_status().unwrap().bytes().await.unwrap();
    let image = image::load_from_memory(&bytes).unwrap().to_rgb8();
    image.get_pixel(x, y).0
}

fn close_to(actual: [u8; 3], expected: [u8; 3]) -> bool {
    actual.iter().zip(expected).all(|(a, e)| (i16::from(*a) - i16::from(e)).abs() <= 40)
}

async fn a_job_renders_every_value_with_urls_assets_placeholders_and_rich_text(mode: Mode) {
    let w = world(mode, 10).await;
    let red = w.files.file("/red.png", "image/png", std::fs::read(png(w.dir.path(), "red.png", "0xff0000")).unwrap());
    let blue = png(w.dir.path(), "blue.png", "0x0000ff");
    let asset = w.app.upload(&w.token, None, &blue, "image/png").await;
    let asset_id = w.app.wait_for_asset(&w.token, asset["id"].as_str().unwrap()).await["metadata"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let body = w.job(
        "480p",
        json!([
            {
                "external_id": "first",
                "title": "First",
                "metadata": {"crm": 7},
                "template_variables": {
                    URL_PHOTO: red,
                    ASSET_PHOTO: asset_id,
                    NULL_PHOTO: null,
                    HEADLINE: {"type": "rich-text", "value": "<b>Hello</b> <color value=\"yellow\">world</color>"}
                }
            },
            { "external_id": "second", "template_variables": { HEADLINE: "Plain & simple" } }
        ]),
    );
    let created = json(w.post_job(&body).await, 200).await;
    assert_eq!(created["template_id"], w.template.id.as_str());
    assert_eq!(created["status"], "started");
    let videos = created["videos"].as_array().unwrap();
    assert_eq!(videos.len(), 2);
    assert_eq!((videos[0]["external_id"].as_str(), videos[1]["external_id"].as_str()), (Some("first"), Some("second")));
    assert_eq!(
        (videos[0]["status"].as_str(), videos[0]["url"].as_str(), videos[0]["error"].as_str()),
        (Some("pending"), Some(""), Some(""))
    );
    assert!(videos[0]["created_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{created}");
    assert_eq!((&videos[0]["started_at"], &videos[0]["finished_at"]), (&Value::Null, &Value::Null));
    assert_eq!(w.credits().await, 8, "one credit per video");

    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "finished", "{job}");
    for (video, external_id) in job["videos"].as_array().unwrap().iter().zip(["first", "second"]) {
        assert_eq!(video["status"], "success", "{video}");
        assert_eq!(video["external_id"], external_id);
        assert_eq!(video["progress"], 100);
        // RFC 3339 in UTC with milliseconds: ordered as strings.
        let times = ["created_at", "started_at", "finished_at"]
            .map(|t| video[t].as_str().unwrap_or_else(|| panic!("{t}: {video}")));
        assert!(times[0] <= times[1] && times[1] <= times[2], "{times:?}");
        let probe = probe_url(video["url"].as_str().unwrap(), w.dir.path()).await;
        assert_eq!((probe.width, probe.height), (Some(640), Some(480)), "480p of a 4:3 canvas");
        assert!((probe.duration.unwrap() - 1.5).abs() < 0.05, "duration {:?}", probe.duration);
        assert_eq!((probe.video_codec.as_deref(), probe.audio_codec.as_deref()), (Some("h264"), Some("aac")));
    }
    assert_eq!(job["videos"][0]["metadata"], json!({"crm": 7}));
    assert_eq!(job["videos"][0]["title"], "First");
    assert_eq!(job["videos"][1]["title"], "");
    // The thumbnail shows each image where its variable is (box centres at 2× scale).
    let first = job["videos"][0]["thumbnail"].as_str().unwrap();
    assert!(close_to(pixel(first, 100, 120).await, [255, 0, 0]), "the address's red image");
    assert!(close_to(pixel(first, 320, 120).await, [0, 0, 255]), "the asset's blue image");
    assert!(close_to(pixel(first, 540, 120).await, [0, 255, 0]), "null keeps the green placeholder");
    let second = job["videos"][1]["thumbnail"].as_str().unwrap();
    assert!(close_to(pixel(second, 100, 120).await, [0, 255, 0]), "a missing value keeps the placeholder");
    assert_eq!(w.files.hits("/red.png"), 1, "the address is fetched once");
    assert_eq!(w.credits().await, 8);
    w.app.stop().await;
}

async fn each_quality_sets_the_shorter_side(mode: Mode) {
    let w = world(mode, 10).await;
    for (quality, size) in [("720p", (960, 720)), ("1080p", (1440, 1080)), ("default", (320, 240))] {
        let created = json(w.post_job(&w.job(quality, json!([{}]))).await, 200).await;
        let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
        assert_eq!(job["quality"], quality);
        let probe = probe_url(job["videos"][0]["url"].as_str().unwrap(), w.dir.path()).await;
        assert_eq!((probe.width, probe.height), (Some(size.0), Some(size.1)), "{quality}");
    }
    w.app.stop().await;
}

async fn concurrent_jobs_never_spend_more_credits_than_there_are(mode: Mode) {
    let w = world(mode, 20).await;
    // Projects only would cost nothing; these are renders.
    let body = w.job("default", json!([{ "template_variables": { HEADLINE: "Race" } }]));
    let answers = futures::future::join_all((0..50).map(|_| w.post_job(&body))).await;
    let mut accepted = 0;
    let mut refused = 0;
    for res in answers {
        match res.status().as_u16() {
            200 => accepted += 1,
            402 => {
                let body = error(res, 402, "error.generator_contract_exceeded").await;
                let message = body["message"].as_str().unwrap();
                assert!(message.contains("used up") && message.contains("sales"), "{message}");
                refused += 1;
            }
            other => panic!("unexpected status {other}: {}", res.text().await.unwrap()),
        }
    }
    assert_eq!((accepted, refused), (20, 30));
    assert_eq!(w.credits().await, 0);
    let jobs = json(w.app.get("/generator/v1/jobs?limit=500", &w.token).await, 200).await;
    assert_eq!(jobs.as_array().unwrap().len(), 20, "only accepted jobs exist");
    let of_template =
        json(w.app.get(&format!("/generator/v1/templates/{}/jobs?limit=5&page=2", w.template.id), &w.token).await, 200)
            .await;
    assert_eq!(of_template.as_array().unwrap().len(), 5);
    w.app.stop().await;
}

async fn a_failing_address_fails_its_video_and_refunds_the_credit(mode: Mode) {
    let w = world(mode, 3).await;
    let missing = w.files.status("/gone.png", 404);
    let body = w.job(
        "default",
        json!([
            { "external_id": "bad", "template_variables": { URL_PHOTO: missing } },
            { "external_id": "good" }
        ]),
    );
    let created = json(w.post_job(&body).await, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "finished", "a job finishes when every video ended: {job}");
    let bad = &job["videos"][0];
    assert_eq!(bad["status"], "failed");
    assert_eq!(bad["url"], "");
    let message = bad["error"].as_str().unwrap();
    assert!(message.contains("/gone.png") && message.contains("404"), "{message}");
    assert_eq!(job["videos"][1]["status"], "success");
    assert_eq!(w.credits().await, 2, "the failed video's credit came back");
    w.app.stop().await;
}

async fn a_render_that_keeps_failing_is_given_up_dead_lettered_and_refunded(mode: Mode) {
    let w = world_with(mode, 2, &[("REELFARM_DELIVERY_LIMIT", "3")]).await;
    let flaky = w.files.status("/busy.png", 503);
    let created =
        json(w.post_job(&w.job("default", json!([{ "template_variables": { URL_PHOTO: flaky } }]))).await, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "failed", "{job}");
    let message = video["error"].as_str().unwrap();
    assert!(message.contains("503") && message.contains("tried 3 times"), "{message}");
    assert_eq!(w.files.hits("/busy.png"), 3, "one fetch per delivery, up to the limit");
    assert_eq!(w.credits().await, 2, "refunded");
    let render =
        w.app.service.backends.store().render(&RenderId::parse(video["id"].as_str().unwrap()).unwrap()).await.unwrap();
    assert_eq!(render.attempts, 3);
    assert_eq!(dead_letters(&w.app).await, 1, "the given-up message is kept for the operators");
    w.app.stop().await;
}

async fn a_value_above_the_configured_image_limit_fails_naming_its_layer(mode: Mode) {
    // 400×400 = 160,000 pixels; the template's own 200×200 placeholders fit under 50,000.
    let big_png = |dir: &Path| {
        let out = dir.join("big.png");
        media::ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=400x400", "-frames:v", "1"], &out);
        std::fs::read(out).unwrap()
    };
    let w = world_with(mode, 3, &[("REELFARM_MAX_IMAGE_PIXELS", "50000")]).await;
    let big = w.files.file("/big.png", "image/png", big_png(w.dir.path()));
    let body = w.job(
        "default",
        json!([
            { "external_id": "big", "template_variables": { URL_PHOTO: big } },
            { "external_id": "placeholders" }
        ]),
    );
    let created = json(w.post_job(&body).await, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "failed", "{job}");
    let message = video["error"].as_str().unwrap();
    assert!(message.contains("url_photo") && message.contains("too large") && message.contains("50000"), "{message}");
    assert_eq!(job["videos"][1]["status"], "success", "{job}");
    w.app.stop().await;

    // With the default limit the same value renders.
    let w = world(mode, 1).await;
    let big = w.files.file("/big.png", "image/png", big_png(w.dir.path()));
    let body = w.job("default", json!([{ "template_variables": { URL_PHOTO: big } }]));
    let created = json(w.post_job(&body).await, 200).await;
    let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
    assert_eq!(job["videos"][0]["status"], "success", "{job}");
    w.app.stop().await;
}

/// Messages in the render queue's dead letters.
async fn dead_letters(app: &TestApp) -> usize {
    use reelfarm_domain::message::Queue;
    if app.mode == Mode::Embedded {
        return app.service.backends.store().dead_letters(Queue::Render).await.unwrap().len();
    }
    let queue = format!("{}.render.dead", app.config.bus.namespace);
    for _ in 0..50 {
        let out = tokio::process::Command::new("rabbitmqctl")
            .args(["-q", "list_queues", "name", "messages"])
            .output()
            .await
            .expect("rabbitmqctl runs");
        let listing = String::from_utf8_lossy(&out.stdout).to_string();
        let count = listing
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(n, _)| *n == queue)
            .and_then(|(_, c)| c.trim().parse().ok());
        if let Some(n @ 1..) = count {
            return n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    0
}

async fn idempotency_keys_replay_the_first_response_without_charging(mode: Mode) {
    let w = world(mode, 5).await;
    let body = w.job("default", json!([{ "external_id": "once" }]));
    let key = [("Idempotency-Key", "order-42")];
    let first = w.app.post_json("/generator/v1/jobs", &w.token, &body, &key).await;
    assert_eq!(first.status(), 200);
    let first = first.text().await.unwrap();
    let again = w.app.post_json("/generator/v1/jobs", &w.token, &body, &key).await;
    assert_eq!(again.headers().get("idempotent-replayed").map(|v| v.to_str().unwrap()), Some("true"));
    assert_eq!(again.text().await.unwrap(), first, "the first response, byte for byte");
    assert_eq!(w.credits().await, 4, "charged once");

    let other = w.job("default", json!([{ "external_id": "twice" }]));
    error(w.app.post_json("/generator/v1/jobs", &w.token, &other, &key).await, 409, "error.conflict").await;
    // Another key, or none, is another job.
    json(w.app.post_json("/generator/v1/jobs", &w.token, &body, &[("Idempotency-Key", "order-43")]).await, 200).await;
    json(w.post_job(&body).await, 200).await;
    assert_eq!(w.credits().await, 2);
    error(
        w.app.post_json("/generator/v1/jobs", &w.token, &body, &[("Idempotency-Key", "")]).await,
        400,
        "error.invalid_request",
    )
    .await;

    let jobs = json(w.app.get("/generator/v1/jobs", &w.token).await, 200).await;
    assert_eq!(jobs.as_array().unwrap().len(), 3);
    w.app.stop().await;
}

async fn every_invalid_field_is_named_in_one_answer(mode: Mode) {
    let w = world(mode, 5).await;
    let stranger = w.app.create_user("stranger", None, 0).await;
    let stranger_token = w.app.token_for(&stranger).await;
    let theirs = png(w.dir.path(), "theirs.png", "0x0000ff");
    let their_asset = w.app.upload(&stranger_token, None, &theirs, "image/png").await;
    let their_asset = w.app.wait_for_asset(&stranger_token, their_asset["id"].as_str().unwrap()).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let unknown = "55555555-5555-4555-8555-555555555555";

    let cases: Vec<(Value, &str)> = vec![
        (json!({ unknown: "x" }), unknown),
        (json!({ HEADLINE: 42 }), HEADLINE),
        (json!({ HEADLINE: "x".repeat(41) }), HEADLINE),
        (json!({ HEADLINE: "" }), HEADLINE),
        (json!({ HEADLINE: {"type": "rich-text", "value": "one<br/>two"} }), HEADLINE),
        (json!({ HEADLINE: {"type": "rich-text", "value": "ab<blink>c</blink>"} }), HEADLINE),
        (json!({ HEADLINE: {"type": "rich-text", "value": "<b>open"} }), HEADLINE),
        (json!({ HEADLINE: {"type": "rich-text", "value": "<color value=\"notacolour\">x</color>"} }), HEADLINE),
        (json!({ URL_PHOTO: their_asset }), URL_PHOTO),
        (json!({ URL_PHOTO: "no-such-asset" }), URL_PHOTO),
        (json!({ URL_PHOTO: "ftp://127.0.0.1/a.png" }), URL_PHOTO),
        (json!({ URL_PHOTO: "http://127.0.0.1/report.pdf" }), URL_PHOTO),
        (json!({ URL_PHOTO: {"type": "tts"} }), URL_PHOTO),
    ];
    for (variables, id) in cases {
        let body = w.job("default", json!([{ "template_variables": variables }]));
        let res = error(w.post_job(&body).await, 400, "error.validation_failed").await;
        let field = format!("values[0].template_variables.{id}");
        assert_eq!(res["errors"][0]["field"], field.as_str(), "{variables}: {res}");
    }
    // Position of a markup error.
    let body =
        w.job("default", json!([{ "template_variables": { HEADLINE: {"type": "rich-text", "value": "ab<blink>"} } }]));
    let res = error(w.post_job(&body).await, 400, "error.validation_failed").await;
    assert!(res["errors"][0]["message"].as_str().unwrap().contains("at character 2"), "{res}");

    // Every problem at once, with its path.
    let body = json!({
        "template_id": w.template.id,
        "options": { "quality": "4k" },
        "values": [{ "template_variables": { HEADLINE: 1 } }, { "template_variables": { unknown: "x" } }],
        "notifications": [{ "type": "callback", "payload": {} }, { "type": "email", "payload": { "email": "nope" } }]
    });
    let res = error(w.post_job(&body).await, 400, "error.validation_failed").await;
    let fields: Vec<&str> = res["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["options.quality", "notifications[0].payload.url", "notifications[1].payload.email"], "{res}");
    // (Values are checked once the request's shape is valid.)
    let body = json!({
        "template_id": w.template.id,
        "options": {},
        "values": [{ "template_variables": { HEADLINE: 1 } }, { "template_variables": { unknown: "x" } }]
    });
    let res = error(w.post_job(&body).await, 400, "error.validation_failed").await;
    let fields: Vec<&str> = res["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(
        fields,
        [format!("values[0].template_variables.{HEADLINE}"), format!("values[1].template_variables.{unknown}")]
    );

    // Unknown (or invisible) template: 404; nothing was charged.
    let body = json!({ "template_id": "no-such-template", "options": {}, "values": [{}] });
    error(w.post_job(&body).await, 404, "error.not_found").await;
    let body = json!({ "template_id": w.template.id, "options": {}, "values": [{}] });
    error(w.app.post_json("/generator/v1/jobs", &stranger_token, &body, &[]).await, 404, "error.not_found").await;
    error(
        w.app
            .client
            .post(w.app.url("/generator/v1/jobs"))
            .bearer_auth(&w.token)
            .body("{")
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap(),
        400,
        "error.invalid_request",
    )
    .await;
    assert_eq!(w.credits().await, 5);
    // Others' jobs are not found.
    let created = json(w.post_job(&w.job("default", json!([{}]))).await, 200).await;
    error(
        w.app.get(&format!("/generator/v1/jobs/{}", created["id"].as_str().unwrap()), &stranger_token).await,
        404,
        "error.not_found",
    )
    .await;
    w.app.stop().await;
}

async fn projects_store_the_template_with_the_values_applied(mode: Mode) {
    let w = world(mode, 0).await;
    let body = json!({
        "template_id": w.template.id,
        "options": { "create_render": false, "create_moov": true },
        "values": [{ "title": "Draft", "template_variables": { HEADLINE: "Project title" } }]
    });
    let created = json(w.post_job(&body).await, 200).await;
    assert_eq!(created["status"], "finished", "nothing to render");
    let video = &created["videos"][0];
    assert_eq!(video["status"], "success");
    let project_id = video["project_id"].as_str().expect("a project id");
    assert_eq!(video["moov_id"], project_id);
    assert_eq!(w.credits().await, 0, "a project alone costs nothing");

    let project = json(w.app.get(&format!("/generator/v1/projects/{project_id}"), &w.token).await, 200).await;
    assert_eq!(project["title"], "Draft");
    assert_eq!(project["template_id"], w.template.id.as_str());
    let layers = &project["json"]["clips"][0]["layers"];
    let headline = layers.as_array().unwrap().iter().find(|l| l["id"] == "headline").unwrap();
    assert_eq!(headline["text"], "Project title");
    let stranger = w.app.create_user("stranger", None, 0).await;
    let token = w.app.token_for(&stranger).await;
    error(w.app.get(&format!("/generator/v1/projects/{project_id}"), &token).await, 404, "error.not_found").await;
    // Rendering with no credits left is refused.
    error(w.post_job(&w.job("default", json!([{}]))).await, 402, "error.generator_contract_exceeded").await;
    w.app.stop().await;
}

/// `<b>` 300,000 times then text, in a body just under the 2 MiB limit, once
/// made the parser walk every open tag for every character on an API thread.
async fn a_hostile_text_value_is_refused_at_once_and_holds_up_nothing(mode: Mode) {
    let w = world(mode, 5).await;
    let body_with = |markup: &str| {
        w.job("default", json!([{ "template_variables": { HEADLINE: {"type": "rich-text", "value": markup} } }]))
    };
    let room = 2 * 1024 * 1024 - 1024 - serde_json::to_vec(&body_with("")).unwrap().len();
    let hostile = format!("{}{}", "<b>".repeat(300_000), "x".repeat(room - 900_000));
    let body = body_with(&hostile);
    assert_eq!(serde_json::to_vec(&body).unwrap().len(), 2 * 1024 * 1024 - 1024);
    let field = format!("values[0].template_variables.{HEADLINE}");

    let start = Instant::now();
    let (refusals, health) = tokio::join!(
        futures::future::join_all((0..4).map(|_| w.post_job(&body))),
        w.app.client.get(w.app.url("/healthz")).send()
    );
    assert_eq!(health.unwrap().status(), 200);
    for res in refusals {
        let res = error(res, 400, "error.validation_failed").await;
        assert_eq!(res["errors"][0]["field"], field.as_str(), "{res}");
        assert_eq!(res["errors"][0]["key"], "error.invalid", "{res}");
        assert!(res["errors"][0]["message"].as_str().unwrap().contains("too long"), "{res}");
    }
    // Uploading 8 MiB to a loopback server and refusing it: far under the minutes the
    // quadratic parse took.
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());

    // Short but deeply nested: refused at the first tag too many.
    let deep = format!("{}Hi{}", "<b>".repeat(33), "</b>".repeat(33));
    let res = error(w.post_job(&body_with(&deep)).await, 400, "error.validation_failed").await;
    assert_eq!(res["errors"][0]["field"], field.as_str(), "{res}");
    assert!(res["errors"][0]["message"].as_str().unwrap().contains("at character 96: <b> is nested too deep"), "{res}");
    // As deep as allowed: accepted.
    let deep = format!("{}Hi{}", "<b>".repeat(32), "</b>".repeat(32));
    json(w.post_job(&body_with(&deep)).await, 200).await;
    assert_eq!(w.credits().await, 4, "only the accepted job was charged");
    w.app.stop().await;
}

/// The AAC packets of the MP4 at `url`, as an ADTS stream (ffmpeg CLI, stream copy).
async fn audio_packets(url: &str, dir: &Path) -> Vec<u8> {
    let bytes = reqwest::get(url).await.unwrap().error_for_status().unwrap().bytes().await.unwrap();
    let (mp4, adts) = (dir.join(format!("{}.mp4", uuid::Uuid::new_v4().simple())), dir.join("out.aac"));
    std::fs::write(&mp4, &bytes).unwrap();
    media::ffmpeg(&["-i", mp4.to_str().unwrap(), "-map", "0:a", "-c", "copy", "-f", "adts"], &adts);
    std::fs::read(&adts).unwrap()
}

/// The template's sound (its soundtrack: the values change only pictures) is encoded by
/// the first render and kept in the blob store; a worker process that never encoded it
/// (the process's own cache emptied, as a fresh process has it) writes the stored packets
/// instead, byte for byte the same sound (the kept sound, once per fleet).
async fn a_templates_sound_is_encoded_once_for_the_whole_fleet(mode: Mode) {
    let w = world(mode, 10).await;
    let blobs = w.app.service.backends.blobs();
    let mut urls = Vec::new();
    for headline in ["One", "Two"] {
        // Each render runs in a child of its own: nothing but the fleet's store keeps a sound.
        let body = w.job("480p", json!([{ "template_variables": { HEADLINE: headline } }]));
        let created = json(w.post_job(&body).await, 200).await;
        let job = w.app.wait_for_job(&w.token, created["id"].as_str().unwrap()).await;
        assert_eq!(job["videos"][0]["status"], "success", "{job}");
        urls.push(job["videos"][0]["url"].as_str().unwrap().to_string());
        assert_eq!(blobs.list("sounds/").await.unwrap().len(), 1, "one sound kept for the fleet");
    }
    let metrics = reqwest::get(w.app.url("/metrics")).await.unwrap().text().await.unwrap();
    let count = |source: &str| {
        let line = format!("reelfarm_render_sound_total{{source=\"{source}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&line)).map_or(0.0, |v| v.parse::<f64>().unwrap())
    };
    // The import's preview and the first job encoded; the second job wrote the kept sound.
    assert_eq!((count("encoded"), count("kept")), (2.0, 1.0), "{metrics}");
    let (first, second) = (audio_packets(&urls[0], w.dir.path()).await, audio_packets(&urls[1], w.dir.path()).await);
    assert!(first.len() > 1000);
    assert!(first == second, "the kept sound is the encoded one, byte for byte");
}
