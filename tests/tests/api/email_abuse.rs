//! Failed renders and e-mail as free abuse, in both modes: recipients capped
//! per notification and per job at creation, e-mails per user and hour capped by the
//! notifier (the rest fail with the reason), no e-mail for a failed render while its
//! callback still goes out, values at refused IP addresses refused before charging.

use std::path::Path;
use std::time::Duration;

use reelfarm_backends::store::{CreditStore, UserStore};
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_tests::files::FileServer;
use reelfarm_tests::smtp::SmtpServer;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    too_many_recipients_are_refused_naming_the_field,
    e_mails_over_the_hourly_limit_are_not_sent_and_say_why,
    a_failing_address_sends_its_callback_but_no_e_mail_and_a_refused_one_is_not_charged,
);

const IMAGE: &str = "11111111-1111-4111-8111-111111111111";

/// A 160×120, 0.5 s, 10 fps template with an image variable.
fn template(dir: &Path) -> Value {
    let green = dir.join("green.png");
    reelfarm_tests::media::ffmpeg(&["-f", "lavfi", "-i", "color=c=0x00ff00:s=64x64", "-frames:v", "1"], &green);
    json!({
        "version": 1,
        "name": "E-mail abuse test",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#000000" },
        "clips": [{
            "id": "only",
            "duration": 0.5,
            "layers": [{
                "id": "photo", "kind": "image", "x": 0, "y": 0, "width": 64, "height": 64,
                "source": { "file": "green.png" },
                "variable": { "id": IMAGE, "name": "Photo" }
            }]
        }]
    })
}

struct World {
    app: TestApp,
    token: String,
    template: TemplateRecord,
    smtp: SmtpServer,
    receiver: FileServer,
    _dir: tempfile::TempDir,
}

async fn world(mode: Mode, settings: &[(&str, &str)]) -> World {
    let smtp = SmtpServer::start().await;
    let mut all = vec![("REELFARM_SMTP_URL", smtp.url())];
    all.extend(settings.iter().map(|(k, v)| (*k, v.to_string())));
    let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let app = TestApp::spawn_with(mode, &all).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("mailer", 50, dir.path(), &template(dir.path())).await;
    World { app, token, template, smtp, receiver: FileServer::start().await, _dir: dir }
}

impl World {
    fn body(&self, values: Vec<Value>, notifications: Value) -> Value {
        json!({ "template_id": self.template.id, "options": {}, "values": values, "notifications": notifications })
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        self.app.post_json("/generator/v1/jobs", &self.token, body, &[]).await
    }

    /// Creates the job; returns its id.
    async fn create(&self, body: &Value) -> String {
        let created = json(self.app.post_json("/generator/v1/jobs", &self.token, body, &[]).await, 200).await;
        created["id"].as_str().unwrap().to_string()
    }

    /// Polls the job's deliveries until `count` are planned and none is pending (30 s at most).
    async fn settled_deliveries(&self, job_id: &str, count: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let path = format!("/generator/v1/jobs/{job_id}/notifications");
            let deliveries = json(self.app.get(&path, &self.token).await, 200).await;
            let list = deliveries.as_array().unwrap();
            if list.len() == count && list.iter().all(|d| d["status"] != "pending") {
                return list.clone();
            }
            assert!(std::time::Instant::now() < deadline, "deliveries not settled after 30 s: {deliveries}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn addresses(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("r{i}@example.com")).collect()
}

async fn too_many_recipients_are_refused_naming_the_field(mode: Mode) {
    let w = world(mode, &[]).await;

    // Eleven addresses in one notification.
    let email = json!([{ "type": "callback", "payload": { "url": "http://127.0.0.1:9/hook" } },
                      { "type": "email", "payload": { "email": addresses(11) } }]);
    let body = error(w.post(&w.body(vec![json!({})], email)).await, 400, "error.validation_failed").await;
    let fields: Vec<&Value> = body["errors"].as_array().unwrap().iter().map(|e| &e["field"]).collect();
    assert_eq!(fields, ["notifications[1].payload.email"], "{body}");

    // Ten addresses to each of six videos: 60 e-mails, over the 50 a job may send.
    let email = json!([{ "type": "email", "payload": { "email": addresses(10) } }]);
    let body = error(w.post(&w.body(vec![json!({}); 6], email.clone())).await, 400, "error.validation_failed").await;
    assert_eq!(body["errors"][0]["field"], "notifications[0].payload.email", "{body}");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("60"), "{body}");

    // Five videos: 50 e-mails, accepted; nothing was charged for the refused ones.
    json(w.post(&w.body(vec![json!({}); 5], email)).await, 200).await;
    let user = w.app.service.backends.store().find_user("mailer").await.unwrap();
    assert_eq!(w.app.service.backends.store().available_credits(&user.id).await.unwrap(), 45);
    w.app.stop().await;
}

async fn e_mails_over_the_hourly_limit_are_not_sent_and_say_why(mode: Mode) {
    let w = world(mode, &[("REELFARM_EMAIL_RATE_LIMIT", "2")]).await;
    let email = json!([{ "type": "email", "payload": { "email": ["ann@example.com"] } }]);
    let job_id = w.create(&w.body(vec![json!({}); 4], email)).await;
    let job = w.app.wait_for_job(&w.token, &job_id).await;
    assert!(job["videos"].as_array().unwrap().iter().all(|v| v["status"] == "success"), "{job}");

    let deliveries = w.settled_deliveries(&job_id, 4).await;
    assert_eq!(w.smtp.received().len(), 2, "exactly the limit reached the mail server");
    let delivered = deliveries.iter().filter(|d| d["status"] == "delivered").count();
    let refused: Vec<&Value> = deliveries.iter().filter(|d| d["status"] == "failed").collect();
    assert_eq!((delivered, refused.len()), (2, 2), "{deliveries:?}");
    for d in refused {
        assert!(d["error"].as_str().unwrap().contains("REELFARM_EMAIL_RATE_LIMIT"), "{d}");
        assert_eq!(d["attempts"].as_array().unwrap().len(), 1, "not retried: {d}");
    }
    w.app.stop().await;
}

async fn a_failing_address_sends_its_callback_but_no_e_mail_and_a_refused_one_is_not_charged(mode: Mode) {
    let w = world(mode, &[]).await;
    let hook = w.receiver.statuses("/hook", &[200]);
    let notifications = json!([
        { "type": "callback", "payload": { "url": hook } },
        { "type": "email", "payload": { "email": addresses(3), "subject": "Cheap pills", "message": "Buy now" } },
    ]);

    // An IP address the outbound policy refuses (loopback, but not on
    // REELFARM_OUTBOUND_ALLOW as 127.0.0.1 is) can never be fetched: refused at creation.
    let port = url::Url::parse(&w.receiver.address).unwrap().port().unwrap();
    let values = vec![json!({ "template_variables": { IMAGE: format!("http://127.0.0.2:{port}/photo.png") } })];
    let body = error(w.post(&w.body(values, notifications.clone())).await, 400, "error.validation_failed").await;
    assert_eq!(body["errors"][0]["field"], format!("values[0].template_variables.{IMAGE}"), "{body}");
    assert_eq!(body["errors"][0]["key"], "error.outbound_refused", "{body}");
    let user = w.app.service.backends.store().find_user("mailer").await.unwrap();
    assert_eq!(w.app.service.backends.store().available_credits(&user.id).await.unwrap(), 50, "nothing charged");

    // An address that fails when fetched (404): the video fails, its callback goes out,
    // its e-mail does not.
    let missing = w.receiver.statuses("/photo.png", &[404]);
    let values = vec![json!({ "template_variables": { IMAGE: missing } })];
    let job_id = w.create(&w.body(values, notifications)).await;
    let job = w.app.wait_for_job(&w.token, &job_id).await;
    assert_eq!(job["videos"][0]["status"], "failed", "{job}");

    let deliveries = w.settled_deliveries(&job_id, 2).await;
    let callback = deliveries.iter().find(|d| d["type"] == "callback").unwrap();
    assert_eq!(callback["status"], "delivered", "{callback}");
    assert_eq!(w.receiver.hits("/hook"), 1);
    let email = deliveries.iter().find(|d| d["type"] == "email").unwrap();
    assert_eq!(email["status"], "failed", "{email}");
    assert!(email["error"].as_str().unwrap().contains("finished videos only"), "{email}");
    assert_eq!(email["attempts"].as_array().unwrap().len(), 1, "not retried: {email}");
    assert!(w.smtp.received().is_empty(), "no e-mail for a failed render");
    w.app.stop().await;
}
