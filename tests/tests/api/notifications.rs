//! Callbacks end to end (spec §6, §6.1), in both modes: the render's body
//! POSTed and signed per Standard Webhooks when its video ends, on success and on
//! failure; non-2xx answers retried on the schedule with a stable `webhook-id`, then
//! given up; refused addresses; every attempt visible through
//! `GET /generator/v1/jobs/{id}/notifications`; retry state surviving a restart; two
//! notifiers delivering each callback once; e-mail, video-site and cloud-drive
//! notifications of a job reaching a real SMTP server and a fake of Google's APIs.

use std::path::Path;
use std::time::Duration;

use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_notifier::signing;
use reelfarm_tests::files::{FileServer, Received};
use reelfarm_tests::google::{self, FakeGoogle, Kind};
use reelfarm_tests::smtp::SmtpServer;
use reelfarm_tests::{both_modes, json, Mode, Role, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_finished_video_is_called_back_with_its_signed_body,
    a_failed_video_is_called_back_with_the_failure_body,
    failing_answers_are_retried_on_the_schedule_with_one_webhook_id_then_given_up,
    a_callback_to_a_refused_address_fails_at_once,
    a_pending_retry_survives_a_restart,
    one_job_delivers_every_notification_type,
    an_unlinked_account_fails_its_upload_but_not_the_video,
    the_callback_continues_the_trace_of_the_job_request,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_notifiers_deliver_each_callback_once() {
    two_notifiers(Mode::Distributed).await
}

const IMAGE: &str = "11111111-1111-4111-8111-111111111111";
const HEADLINE: &str = "44444444-4444-4444-8444-444444444444";

/// A 160×120, 0.5 s, 10 fps template with an image and a text variable.
fn template(dir: &Path) -> Value {
    let green = dir.join("green.png");
    reelfarm_tests::media::ffmpeg(&["-f", "lavfi", "-i", "color=c=0x00ff00:s=64x64", "-frames:v", "1"], &green);
    json!({
        "version": 1,
        "name": "Callbacks test",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#000000" },
        "clips": [{
            "id": "only",
            "duration": 0.5,
            "layers": [
                {
                    "id": "photo", "kind": "image", "x": 0, "y": 0, "width": 64, "height": 64,
                    "source": { "file": "green.png" },
                    "variable": { "id": IMAGE, "name": "Photo", "weight": 1 }
                },
                {
                    "id": "headline", "kind": "text", "x": 10, "y": 70, "width": 140, "height": 40,
                    "text": "Default", "font": { "family": "Liberation Sans", "size": 16, "color": "#ffffff" },
                    "variable": { "id": HEADLINE, "name": "Headline", "weight": 2 }
                }
            ]
        }]
    })
}

struct World {
    app: TestApp,
    token: String,
    template: TemplateRecord,
    receiver: FileServer,
    _dir: tempfile::TempDir,
}

async fn world(mode: Mode, settings: &[(&str, &str)]) -> World {
    let app = TestApp::spawn_with(mode, settings).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("caller", 10, dir.path(), &template(dir.path())).await;
    World { app, token, template, receiver: FileServer::start().await, _dir: dir }
}

impl World {
    /// Creates a job of one video with `variables` and a callback to `url`; returns its id.
    async fn job(&self, variables: Value, url: &str) -> String {
        self.job_with_headers(variables, url, &[]).await
    }

    async fn job_with_headers(&self, variables: Value, url: &str, headers: &[(&str, &str)]) -> String {
        let body = json!({
            "template_id": self.template.id,
            "options": {},
            "values": [{ "external_id": "ext-1", "title": "First", "template_variables": variables }],
            "notifications": [{ "type": "callback", "payload": { "url": url } }]
        });
        let created = json(self.app.post_json("/generator/v1/jobs", &self.token, &body, headers).await, 200).await;
        created["id"].as_str().unwrap().to_string()
    }

    async fn secret(&self) -> String {
        let body = json(self.app.get("/api2/v1/users/me/webhook-secret", &self.token).await, 200).await;
        body["secret"].as_str().unwrap().to_string()
    }

    async fn deliveries(&self, job_id: &str) -> Value {
        json(self.app.get(&format!("/generator/v1/jobs/{job_id}/notifications"), &self.token).await, 200).await
    }

    /// Polls the job's deliveries until none is pending (30 s at most).
    async fn settled_deliveries(&self, job_id: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let deliveries = self.deliveries(job_id).await;
            let list = deliveries.as_array().unwrap();
            if !list.is_empty() && list.iter().all(|d| d["status"] != "pending") {
                return deliveries;
            }
            assert!(std::time::Instant::now() < deadline, "deliveries still pending after 30 s: {deliveries}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Checks the Standard Webhooks headers of `request` against `secret`; returns its id.
fn verify_signature(request: &Received, secret: &str) -> String {
    let id = &request.headers["webhook-id"];
    let timestamp: i64 = request.headers["webhook-timestamp"].parse().unwrap();
    let now = reelfarm_domain::id::now_ms() / 1000;
    assert!((now - timestamp).abs() < 60, "timestamp {timestamp} is not current");
    let expected = signing::sign(secret, id, timestamp, &request.body).unwrap();
    assert_eq!(request.headers["webhook-signature"], expected);
    assert_eq!(request.headers["content-type"], "application/json");
    id.clone()
}

async fn a_finished_video_is_called_back_with_its_signed_body(mode: Mode) {
    let w = world(mode, &[]).await;
    let url = w.receiver.statuses("/hook", &[204]);
    let job_id = w.job(json!({ HEADLINE: "Hello" }), &url).await;
    let job = w.app.wait_for_job(&w.token, &job_id).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "success", "{job}");

    let request = &w.receiver.wait_for("/hook", 1).await[0];
    assert_eq!(request.method, "POST");
    let secret = w.secret().await;
    let webhook_id = verify_signature(request, &secret);
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({
            "resource_type": "render",
            "resource": {
                "id": video["id"], "job_id": job_id, "template_id": w.template.id,
                "external_id": "ext-1", "status": "success", "title": "First", "error": null,
                "project_id": null, "moov_id": null,
                "thumbnail": video["thumbnail"], "url": video["url"],
            }
        })
    );
    // The addresses are absolute and fetchable without a token.
    let mp4 = reqwest::get(body["resource"]["url"].as_str().unwrap()).await.unwrap();
    assert_eq!(mp4.status(), 200);

    let deliveries = w.settled_deliveries(&job_id).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery["id"], webhook_id.as_str(), "the webhook id is the delivery's");
    assert_eq!(delivery["type"], "callback");
    assert_eq!(delivery["payload"], json!({ "url": url }));
    assert_eq!(delivery["render_id"], video["id"]);
    assert_eq!(delivery["status"], "delivered");
    assert_eq!(delivery["error"], Value::Null);
    let attempts = delivery["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{delivery}");
    assert_eq!(attempts[0]["number"], 1);
    assert_eq!(attempts[0]["status_code"], 204);
    assert_eq!(attempts[0]["outcome"], "delivered");
    assert_eq!(w.receiver.hits("/hook"), 1, "delivered once");

    // Someone else's job is not found.
    let (_, other) = w.app.user_with_token("other").await;
    let res = w.app.get(&format!("/generator/v1/jobs/{job_id}/notifications"), &other).await;
    reelfarm_tests::error(res, 404, "error.not_found").await;
    w.app.stop().await;
}

async fn a_failed_video_is_called_back_with_the_failure_body(mode: Mode) {
    let w = world(mode, &[]).await;
    let missing = w.receiver.statuses("/gone.png", &[404]);
    let url = w.receiver.statuses("/hook", &[200]);
    let job_id = w.job(json!({ IMAGE: missing }), &url).await;
    let job = w.app.wait_for_job(&w.token, &job_id).await;
    assert_eq!(job["videos"][0]["status"], "failed", "{job}");

    let request = &w.receiver.wait_for("/hook", 1).await[0];
    verify_signature(request, &w.secret().await);
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let resource = &body["resource"];
    assert_eq!(body["resource_type"], "render");
    assert_eq!(resource["status"], "failed");
    assert_eq!(resource["error"], job["videos"][0]["error"]);
    assert!(resource["error"].as_str().unwrap().contains("404"), "{body}");
    assert_eq!(resource["url"], Value::Null);
    assert_eq!(resource["thumbnail"], Value::Null);
    assert_eq!(resource["external_id"], "ext-1");
    w.app.stop().await;
}

/// The trace id of a W3C `traceparent`.
fn trace_id(traceparent: &str) -> &str {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!((parts.len(), parts[0].len(), parts[1].len(), parts[2].len()), (4, 2, 32, 16), "{traceparent}");
    parts[1]
}

async fn the_callback_continues_the_trace_of_the_job_request(mode: Mode) {
    // Through the outbox, the bus, the worker, the render's event, the notifier's planning
    // and its attempt.
    let w = world(mode, &[]).await;
    let url = w.receiver.statuses("/traced", &[204]);
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    w.job_with_headers(json!({}), &url, &[("traceparent", caller)]).await;
    let called = w.receiver.wait_for("/traced", 1).await;
    let traceparent = &called[0].headers["traceparent"];
    assert_eq!(trace_id(traceparent), "4bf92f3577b34da6a3ce929d0e0e4736", "{traceparent}");
    assert_ne!(traceparent, caller, "a span of ours");

    // Without one, the request starts a trace of its own; an invalid one is not continued.
    let url = w.receiver.statuses("/untraced", &[204]);
    w.job_with_headers(json!({}), &url, &[("traceparent", "00-not-a-trace-01")]).await;
    w.job(json!({}), &url).await;
    let called = w.receiver.wait_for("/untraced", 2).await;
    let ids: Vec<&str> = called.iter().map(|c| trace_id(&c.headers["traceparent"])).collect();
    assert_ne!(ids[0], ids[1], "one trace per request");
    assert!(!ids.contains(&"4bf92f3577b34da6a3ce929d0e0e4736"));
}

async fn failing_answers_are_retried_on_the_schedule_with_one_webhook_id_then_given_up(mode: Mode) {
    // Four attempts: at once, then 300 ms apart (±10 %).
    let w = world(mode, &[("REELFARM_WEBHOOK_RETRY_SCHEDULE", "0s,300ms,300ms,300ms")]).await;
    let url = w.receiver.statuses("/down", &[500, 302, 404, 503]);
    let job_id = w.job(json!({}), &url).await;
    w.app.wait_for_job(&w.token, &job_id).await;
    let deliveries = w.settled_deliveries(&job_id).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery["status"], "failed", "{delivery}");
    let error = delivery["error"].as_str().unwrap();
    assert!(error.contains("gave up after 4 attempts") && error.contains("503"), "{error}");
    let attempts = delivery["attempts"].as_array().unwrap();
    let codes: Vec<&Value> = attempts.iter().map(|a| &a["status_code"]).collect();
    assert_eq!(codes, [500, 302, 404, 503], "{delivery}");
    let outcomes: Vec<&Value> = attempts.iter().map(|a| &a["outcome"]).collect();
    assert_eq!(outcomes, ["retry", "retry", "retry", "failed"]);
    assert!(attempts[1]["error"].as_str().unwrap().contains("redirects are not followed"), "{delivery}");

    let requests = w.receiver.received("/down");
    assert_eq!(requests.len(), 4, "no attempt after the schedule ends");
    let secret = w.secret().await;
    let ids: Vec<String> = requests.iter().map(|r| verify_signature(r, &secret)).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one webhook-id across retries: {ids:?}");
    assert!(requests.windows(2).all(|p| p[0].body == p[1].body), "the same body every time");
    for pair in requests.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(265), "attempts {gap:?} apart, the schedule says 300 ms ± 10 %");
    }

    // A receiver that recovers gets the callback at the next attempt.
    let url = w.receiver.statuses("/flaky", &[503, 200]);
    let job_id = w.job(json!({}), &url).await;
    w.app.wait_for_job(&w.token, &job_id).await;
    let deliveries = w.settled_deliveries(&job_id).await;
    assert_eq!(deliveries[0]["status"], "delivered", "{deliveries}");
    assert_eq!(deliveries[0]["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(w.receiver.hits("/flaky"), 2);
    w.app.stop().await;
}

async fn a_callback_to_a_refused_address_fails_at_once(mode: Mode) {
    let w = world(mode, &[]).await;
    // Loopback, but not on REELFARM_OUTBOUND_ALLOW (127.0.0.1 is): refused before connecting.
    let port = url::Url::parse(&w.receiver.address).unwrap().port().unwrap();
    let job_id = w.job(json!({}), &format!("http://127.0.0.2:{port}/hook")).await;
    w.app.wait_for_job(&w.token, &job_id).await;
    let deliveries = w.settled_deliveries(&job_id).await;
    let delivery = &deliveries[0];
    assert_eq!(delivery["status"], "failed", "{delivery}");
    assert_eq!(delivery["attempts"].as_array().unwrap().len(), 1, "a refusal is not retried: {delivery}");
    assert!(delivery["error"].as_str().unwrap().contains("refused"), "{delivery}");
    assert_eq!(w.receiver.hits("/hook"), 0);
    w.app.stop().await;
}

async fn a_pending_retry_survives_a_restart(mode: Mode) {
    // The second attempt is due 3 s after the first: the service is restarted in between.
    let mut w = world(mode, &[("REELFARM_WEBHOOK_RETRY_SCHEDULE", "0s,3s")]).await;
    let url = w.receiver.statuses("/later", &[500, 200]);
    let job_id = w.job(json!({}), &url).await;
    w.receiver.wait_for("/later", 1).await;
    w.app = w.app.restart().await;
    let deliveries = w.settled_deliveries(&job_id).await;
    assert_eq!(deliveries[0]["status"], "delivered", "{deliveries}");
    let attempts = deliveries[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{deliveries}");
    assert_eq!(attempts[0]["status_code"], 500);
    assert_eq!(attempts[1]["status_code"], 200);
    let requests = w.receiver.received("/later");
    assert_eq!(requests.len(), 2);
    assert!(requests[1].at - requests[0].at >= Duration::from_millis(2700), "the schedule held across the restart");
    w.app.stop().await;
}

async fn two_notifiers(mode: Mode) {
    let w = world(mode, &[]).await;
    let second = Some(w.app.start_role(Role::Notifier).await);
    let mut jobs = Vec::new();
    for i in 0..6 {
        let url = w.receiver.statuses(&format!("/hook/{i}"), &[200]);
        jobs.push(w.job(json!({ HEADLINE: format!("Video {i}") }), &url).await);
    }
    for job_id in &jobs {
        w.app.wait_for_job(&w.token, job_id).await;
        w.settled_deliveries(job_id).await;
    }
    // Time for a duplicate to show up, had there been one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..6 {
        assert_eq!(w.receiver.hits(&format!("/hook/{i}")), 1, "callback {i} delivered once");
    }
    if let Some((service, _dir)) = second {
        service.stop();
        service.wait().await.unwrap();
    }
    w.app.stop().await;
}

/// Links the user's YouTube and Drive accounts to the fake's client.
async fn link_accounts(w: &World) {
    for provider in ["youtube", "gdrive"] {
        let account = json!({
            "client_id": google::CLIENT_ID,
            "client_secret": google::CLIENT_SECRET,
            "refresh_token": google::REFRESH_TOKEN,
        });
        let res = w
            .app
            .client
            .put(w.app.url(&format!("/api2/v1/users/me/integrations/{provider}")))
            .bearer_auth(&w.token)
            .json(&account)
            .send()
            .await
            .unwrap();
        json(res, 200).await;
    }
}

async fn one_job_delivers_every_notification_type(mode: Mode) {
    let smtp = SmtpServer::start().await;
    let fake = FakeGoogle::start().await;
    let oauth = fake.oauth_url();
    let w = world(
        mode,
        &[
            ("REELFARM_SMTP_URL", &smtp.url()),
            ("REELFARM_GOOGLE_API_URL", &fake.address),
            ("REELFARM_GOOGLE_OAUTH_URL", &oauth),
        ],
    )
    .await;
    link_accounts(&w).await;
    let hook = w.receiver.statuses("/hook", &[200]);
    let uploaded = w.receiver.statuses("/uploaded", &[200]);
    let body = json!({
        "template_id": w.template.id,
        "options": {},
        "values": [{ "external_id": "ext-9", "title": "Launch", "template_variables": { HEADLINE: "Launch day" } }],
        "notifications": [
            { "type": "callback", "payload": { "url": hook } },
            { "type": "email", "payload": { "email": ["ann@example.com", "bob@example.com"], "subject": "Your launch video", "message": "Enjoy!" } },
            { "type": "upload-videosite", "payload": { "title": "Launch", "description": "Our launch", "playlist_id": google::PLAYLIST_ID, "callback": uploaded } },
            { "type": "upload-cloudstorage", "payload": { "title": "launch.mp4", "path": google::FOLDER_ID } },
        ]
    });
    let created = json(w.app.post_json("/generator/v1/jobs", &w.token, &body, &[]).await, 200).await;
    let job_id = created["id"].as_str().unwrap();
    let job = w.app.wait_for_job(&w.token, job_id).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "success", "{job}");
    let video_url = video["url"].as_str().unwrap();
    let mp4 = reqwest::get(video_url).await.unwrap().bytes().await.unwrap();

    // The §6.2 callback follows the upload, so five deliveries in all.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let deliveries = loop {
        let deliveries = w.settled_deliveries(job_id).await;
        if deliveries.as_array().unwrap().len() == 5 {
            break deliveries;
        }
        assert!(std::time::Instant::now() < deadline, "{deliveries}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let list = deliveries.as_array().unwrap();
    assert!(list.iter().all(|d| d["status"] == "delivered"), "{deliveries}");
    let of_type = |t: &str| list.iter().filter(|d| d["type"] == t).collect::<Vec<_>>();
    assert_eq!(of_type("callback").len(), 2);
    assert_eq!(of_type("email")[0]["attempts"][0]["status_code"], 250, "{deliveries}");

    // E-mail: one message to both recipients, with the link.
    let mail = &smtp.wait_for(1).await[0];
    let mut recipients = mail.rcpt_tos.clone();
    recipients.sort();
    assert_eq!(recipients, ["ann@example.com", "bob@example.com"]);
    assert_eq!(mail.subject(), "Your launch video");
    assert!(mail.text().contains(video_url) && mail.text().contains("Enjoy!"), "{}", mail.text());
    assert!(mail.html().contains(video_url), "{}", mail.html());

    // Uploads: the rendered bytes, as a private video in the playlist and as the file.
    let uploads = fake.uploads();
    let youtube = uploads.iter().find(|u| u.kind == Kind::Video).expect("a video upload");
    let drive = uploads.iter().find(|u| u.kind == Kind::File).expect("a file upload");
    assert!(youtube.bytes == mp4 && drive.bytes == mp4, "the uploaded bytes are the video's");
    assert_eq!(youtube.metadata["snippet"]["title"], "Launch");
    assert_eq!(youtube.metadata["snippet"]["description"], "Our launch");
    assert_eq!(drive.metadata["name"], "launch.mp4");
    assert_eq!(drive.metadata["parents"], json!([google::FOLDER_ID]));
    assert_eq!(fake.playlist_items(), [(google::PLAYLIST_ID.to_string(), youtube.id.clone())]);
    let site = of_type("upload-videosite")[0];
    assert_eq!(site["result"], json!({ "video_id": youtube.id }));
    assert_eq!(of_type("upload-cloudstorage")[0]["result"], json!({ "file_id": drive.id }));

    // The §6.2 callback after the upload, signed like every callback.
    let request = &w.receiver.wait_for("/uploaded", 1).await[0];
    verify_signature(request, &w.secret().await);
    let report: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        report,
        json!({ "external_id": "ext-9", "type": "render", "status": "success", "payload": { "video_id": youtube.id }, "error": null })
    );
    let follow_up = list.iter().find(|d| d["follows"] == site["id"]).expect("the follow-up names its upload");
    assert_eq!(follow_up["payload"], json!({ "url": uploaded }));
    assert_eq!(w.receiver.hits("/hook"), 1);
    w.app.stop().await;
}

async fn an_unlinked_account_fails_its_upload_but_not_the_video(mode: Mode) {
    let w = world(mode, &[]).await;
    let uploaded = w.receiver.statuses("/uploaded", &[200]);
    let body = json!({
        "template_id": w.template.id,
        "options": {},
        "values": [{ "external_id": "ext-2" }],
        "notifications": [
            { "type": "upload-videosite", "payload": { "title": "T", "description": "D", "callback": uploaded } },
            { "type": "email", "payload": { "email": "ann@example.com" } },
        ]
    });
    let created = json(w.app.post_json("/generator/v1/jobs", &w.token, &body, &[]).await, 200).await;
    let job_id = created["id"].as_str().unwrap();
    let job = w.app.wait_for_job(&w.token, job_id).await;
    assert_eq!(job["videos"][0]["status"], "success", "{job}");

    let request = &w.receiver.wait_for("/uploaded", 1).await[0];
    let report: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(report["status"], "failed", "{report}");
    assert_eq!(report["payload"], json!({ "video_id": null }));
    assert!(report["error"].as_str().unwrap().contains("no YouTube account is linked"), "{report}");

    let deliveries = w.settled_deliveries(job_id).await;
    let list = deliveries.as_array().unwrap();
    let site = list.iter().find(|d| d["type"] == "upload-videosite").unwrap();
    assert_eq!(site["status"], "failed");
    assert_eq!(site["attempts"].as_array().unwrap().len(), 1, "not retried: {site}");
    let email = list.iter().find(|d| d["type"] == "email").unwrap();
    assert_eq!(email["status"], "failed");
    assert!(email["error"].as_str().unwrap().contains("REELFARM_SMTP_URL"), "{email}");
    let job = json(w.app.get(&format!("/generator/v1/jobs/{job_id}"), &w.token).await, 200).await;
    assert_eq!(job["videos"][0]["status"], "success", "a notification never changes the video");
    w.app.stop().await;
}
