//! Cancel, in both modes: `POST /generator/v1/jobs/{id}/cancel` stops a job
//! whose first video is being rendered — the render stops (its work files gone within
//! seconds), no file is left, the waiting videos never start, every credit comes back,
//! the job, its videos and their callbacks say `cancelled` — and the worker goes on with
//! the next job. Cancelling twice, an ended job, someone else's or an unknown one.

use std::time::{Duration, Instant};

use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_tests::browser::Browser;
use reelfarm_tests::files::FileServer;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

use super::console::{console_user, sign_in};

both_modes!(
    a_cancelled_job_stops_refunds_and_calls_back_cancelled,
    cancel_is_the_owners_and_changes_an_ended_job_not,
    a_job_is_cancelled_from_its_console_page
);

/// A 320×180 template of `seconds` at 30 fps: cheap to import (its preview is rendered
/// at its own size), slow to render at 1080p.
fn template(seconds: f64) -> Value {
    json!({
        "version": 1,
        "name": "Cancel test",
        "canvas": { "width": 320, "height": 180, "fps": 30, "background": "#203040" },
        "clips": [{
            "id": "only",
            "duration": seconds,
            "layers": [
                { "id": "box", "kind": "shape", "shape": "rounded_rectangle", "radius": 12, "color": "#e0a030",
                  "x": 20, "y": 20, "width": 120, "height": 80,
                  "animations": [{ "kind": "scale", "from": 0.5, "to": 1.5 }] },
                { "id": "title", "kind": "text", "x": 10, "y": 110, "width": 300, "height": 60,
                  "text": "Cancel me", "font": { "family": "Liberation Sans", "size": 28, "color": "#ffffff" } }
            ]
        }]
    })
}

struct World {
    app: TestApp,
    token: String,
    long: TemplateRecord,
    short: TemplateRecord,
    _dir: tempfile::TempDir,
}

async fn world(mode: Mode) -> World {
    // One render at a time: the next job waits for the cancelled render to stop.
    let app = TestApp::spawn_with(mode, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let dir = tempfile::tempdir().unwrap();
    let user = app.create_user("ada", None, 10).await;
    let token = app.token_for(&user).await;
    let import = |name: &str, seconds: f64| {
        let file = dir.path().join(name);
        std::fs::write(&file, serde_json::to_vec(&template(seconds)).unwrap()).unwrap();
        file
    };
    let long = app.import_template(&import("long.json", 40.0), Some(&user), false).await;
    let short = app.import_template(&import("short.json", 0.5), Some(&user), false).await;
    World { app, token, long, short, _dir: dir }
}

impl World {
    async fn job(&self, template: &TemplateRecord, videos: usize, quality: &str, hook: Option<&str>) -> Value {
        let values: Vec<Value> =
            (0..videos).map(|i| json!({ "external_id": format!("v{i}"), "template_variables": {} })).collect();
        let notifications: Vec<Value> =
            hook.map(|url| json!({ "type": "callback", "payload": { "url": url } })).into_iter().collect();
        let body = json!({ "template_id": template.id, "options": { "quality": quality }, "values": values,
            "notifications": notifications });
        json(self.app.post_json("/generator/v1/jobs", &self.token, &body, &[]).await, 200).await
    }

    async fn cancel(&self, id: &str, token: &str) -> reqwest::Response {
        self.app.post_json(&format!("/generator/v1/jobs/{id}/cancel"), token, &json!({}), &[]).await
    }

    async fn credits(&self) -> i64 {
        json(self.app.get("/generator/v1/users/me/credits", &self.token).await, 200).await["credits"].as_i64().unwrap()
    }

    /// The worker's render work directories (`render-*` under the data directory's `work`).
    fn rendering(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(self.app.config.storage.data_dir.join("work")) else { return 0 };
        entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("render-")).count()
    }
}

fn statuses(job: &Value) -> Vec<(&str, &str)> {
    let videos = job["videos"].as_array().unwrap();
    videos.iter().map(|v| (v["status"].as_str().unwrap(), v["error"].as_str().unwrap())).collect()
}

const CANCELLED: (&str, &str) = ("cancelled", "the job was cancelled");

async fn a_cancelled_job_stops_refunds_and_calls_back_cancelled(mode: Mode) {
    let w = world(mode).await;
    let receiver = FileServer::start().await;
    let hook = receiver.statuses("/hook", &[204]);
    let job = w.job(&w.long, 3, "1080p", Some(&hook)).await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(w.credits().await, 7);

    // Wait until a video is being drawn (frames done; which one comes first is the bus's
    // choice), then cancel.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let now = json(w.app.get(&format!("/generator/v1/jobs/{id}"), &w.token).await, 200).await;
        let videos = now["videos"].as_array().unwrap();
        if videos.iter().any(|v| v["status"] == "started" && v["progress"].as_u64().unwrap() > 0) {
            break;
        }
        assert!(Instant::now() < deadline, "the render did not start: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(w.rendering(), 1);
    let cancelled = json(w.cancel(id, &w.token).await, 200).await;
    let asked = Instant::now();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(statuses(&cancelled), [CANCELLED; 3]);
    assert!(cancelled["videos"].as_array().unwrap().iter().all(|v| v["url"] == "" && v["progress"] == 0));
    assert_eq!(w.credits().await, 10, "every video that had not ended is refunded");

    // The render stops (it had more than a thousand 1080p frames to go) and leaves no file.
    while w.rendering() > 0 {
        assert!(asked.elapsed() < Duration::from_secs(5), "the cancelled render still runs after 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let files = w.app.service.backends.blobs().list(&format!("renders/{id}/")).await.unwrap();
    assert!(files.is_empty(), "files left: {files:?}");

    // Each video's callback says cancelled, as the failure body does otherwise.
    let calls = receiver.wait_for("/hook", 3).await;
    let mut external: Vec<String> = calls
        .iter()
        .map(|call| {
            let body: Value = serde_json::from_slice(&call.body).unwrap();
            let resource = &body["resource"];
            assert_eq!(resource["status"], "cancelled", "{body}");
            assert_eq!(resource["error"], "the job was cancelled", "{body}");
            assert_eq!((&resource["url"], &resource["thumbnail"]), (&Value::Null, &Value::Null), "{body}");
            resource["external_id"].as_str().unwrap().to_string()
        })
        .collect();
    external.sort();
    assert_eq!(external, ["v0", "v1", "v2"]);

    // Twice changes nothing; the worker goes on with the next job (the waiting videos of
    // the cancelled one never start).
    let again = json(w.cancel(id, &w.token).await, 200).await;
    assert_eq!(again, cancelled);
    assert_eq!(w.credits().await, 10);
    let next = w.job(&w.short, 1, "default", None).await;
    let next = w.app.wait_for_job(&w.token, next["id"].as_str().unwrap()).await;
    assert_eq!(next["videos"][0]["status"], "success", "{next}");
    let after = json(w.app.get(&format!("/generator/v1/jobs/{id}"), &w.token).await, 200).await;
    assert_eq!(statuses(&after), [CANCELLED; 3]);
    let started = after["videos"].as_array().unwrap().iter().filter(|v| !v["started_at"].is_null()).count();
    assert_eq!(started, 1, "the waiting videos never started: {after}");
    assert_eq!(receiver.hits("/hook"), 3, "one callback per video");
}

async fn cancel_is_the_owners_and_changes_an_ended_job_not(mode: Mode) {
    let w = world(mode).await;
    let done = w.job(&w.short, 2, "default", None).await;
    let id = done["id"].as_str().unwrap();
    let done = w.app.wait_for_job(&w.token, id).await;
    assert_eq!(done["status"], "finished");
    assert_eq!(json(w.cancel(id, &w.token).await, 200).await, done, "an ended job stays as it ended");
    assert_eq!(w.credits().await, 8);

    let (_, stranger) = w.app.user_with_token("eve").await;
    let running = w.job(&w.long, 1, "default", None).await;
    let running_id = running["id"].as_str().unwrap();
    error(w.cancel(running_id, &stranger).await, 404, "error.not_found").await;
    error(w.cancel("0123456789abcdef0123456789abcdef", &w.token).await, 404, "error.not_found").await;
    let unauthenticated = w.app.client.post(w.app.url(&format!("/generator/v1/jobs/{running_id}/cancel"))).send();
    assert_eq!(unauthenticated.await.unwrap().status(), 401);
    let job = json(w.app.get(&format!("/generator/v1/jobs/{running_id}"), &w.token).await, 200).await;
    assert_ne!(job["status"], "cancelled", "{job}");
    assert_eq!(json(w.cancel(running_id, &w.token).await, 200).await["status"], "cancelled");
    assert_eq!(w.credits().await, 8);
}

/// The console's job page cancels a running job: the job and its video then say
/// cancelled, the button is gone and the credit is back.
async fn a_job_is_cancelled_from_its_console_page(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let (user, email) = console_user(&app, "cleo").await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.json");
    std::fs::write(&file, serde_json::to_vec(&template(40.0)).unwrap()).unwrap();
    let long = app.import_template(&file, Some(&user), false).await;
    let body = json!({ "template_id": long.id, "options": { "quality": "1080p" },
        "values": [{ "template_variables": {} }] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let id = job["id"].as_str().unwrap();
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/jobs/{id}", app.address)).await;
    // Waited for, not read once: the video card's poll swaps the status in anew each second.
    browser.wait_for_texts("#job-status", &["started"], Duration::from_secs(10)).await;
    browser.click_to_page("form.cancel button").await;
    browser.wait_for_texts("#job-status", &["cancelled"], Duration::from_secs(10)).await;
    assert_eq!(browser.texts(".video .status").await, ["cancelled"]);
    let card = browser.texts(".video p.muted").await;
    assert!(card[0].starts_with("Cancelled with its job"), "{card:?}");
    assert!(browser.texts("form.cancel").await.is_empty(), "no cancel button once cancelled");
    let credits = json(app.get("/generator/v1/users/me/credits", &token).await, 200).await;
    assert_eq!(credits["credits"], 7, "the credit is back");
}
