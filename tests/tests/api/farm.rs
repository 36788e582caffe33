//! The farm shared fairly, in both modes, on one worker slot: another
//! account's single video goes ahead of a batch queued before it; within an account a
//! `high` job goes ahead of a `low` one and a draft ahead of both; an account's cap lowers
//! the priority a job asks for; a priority that is not one is refused naming the field.
//! Distributed: a worker whose renders keep failing where another's succeed takes itself
//! out of rotation, its renders are rendered by the other, and an operator puts it back.

use std::time::{Duration, Instant};

use reelfarm_backends::config::BlobLocation;
use reelfarm_backends::store::{ShareStore, WorkerStore};
use reelfarm_domain::id::now_ms;
use reelfarm_domain::priority::Priority;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_server::serve::Service;
use reelfarm_tests::{both_modes, error, json, media, Mode, Role, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_single_video_goes_ahead_of_another_accounts_batch,
    an_accounts_priorities_order_its_jobs_and_drafts_go_first
);

/// A 320×180, 1.5 s template at 30 fps: a few tenths of a second to render.
fn template() -> Value {
    json!({
        "version": 1,
        "name": "Farm test",
        "canvas": { "width": 320, "height": 180, "fps": 30, "background": "#304050" },
        "clips": [{
            "id": "only",
            "duration": 1.5,
            "layers": [
                { "id": "box", "kind": "shape", "shape": "rectangle", "color": "#e0a030",
                  "x": 20, "y": 20, "width": 120, "height": 80,
                  "animations": [{ "kind": "scale", "from": 0.5, "to": 1.5 }] }
            ]
        }]
    })
}

struct World {
    app: TestApp,
    template: TemplateRecord,
    _dir: tempfile::TempDir,
}

/// One render at a time: the order of the claims is the order of the videos' starts.
async fn world(mode: Mode) -> World {
    let app = TestApp::spawn_with(mode, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("farm.json");
    std::fs::write(&file, serde_json::to_vec(&template()).unwrap()).unwrap();
    let template = app.import_template(&file, None, true).await;
    World { app, template, _dir: dir }
}

impl World {
    async fn user(&self, name: &str) -> String {
        let user = self.app.create_user(name, None, 50).await;
        self.app.token_for(&user).await
    }

    async fn post(&self, token: &str, videos: usize, options: Value) -> reqwest::Response {
        let values: Vec<Value> = (0..videos).map(|i| json!({ "external_id": format!("v{i}") })).collect();
        let body = json!({ "template_id": self.template.id, "options": options, "values": values });
        self.app.post_json("/generator/v1/jobs", token, &body, &[]).await
    }

    async fn job(&self, token: &str, videos: usize, options: Value) -> Value {
        json(self.post(token, videos, options).await, 200).await
    }

    /// Waits until a video of job `job` is being rendered.
    async fn wait_started(&self, token: &str, job: &Value) {
        let path = format!("/generator/v1/jobs/{}", job["id"].as_str().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let now = json(self.app.get(&path, token).await, 200).await;
            if now["videos"].as_array().unwrap().iter().any(|v| v["status"] != "pending") {
                return;
            }
            assert!(Instant::now() < deadline, "no video started: {now}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The job once ended, every video a success; the start time of each video.
    async fn starts(&self, token: &str, job: &Value) -> Vec<String> {
        let done = self.app.wait_for_job(token, job["id"].as_str().unwrap()).await;
        let videos = done["videos"].as_array().unwrap();
        assert!(videos.iter().all(|v| v["status"] == "success"), "{done}");
        videos.iter().map(|v| v["started_at"].as_str().unwrap().to_string()).collect()
    }
}

/// How many of `starts` came before `at` (ISO 8601 times of one format sort as text).
fn before(starts: &[String], at: &str) -> usize {
    starts.iter().filter(|s| s.as_str() < at).count()
}

async fn a_single_video_goes_ahead_of_another_accounts_batch(mode: Mode) {
    let w = world(mode).await;
    let (ann, bob) = (w.user("ann").await, w.user("bob").await);
    let batch = w.job(&ann, 10, json!({})).await;
    w.wait_started(&ann, &batch).await;
    let single = w.job(&bob, 1, json!({})).await;

    let single_start = w.starts(&bob, &single).await.remove(0);
    let batch_starts = w.starts(&ann, &batch).await;
    // First come first served would start Bob's video after all ten of Ann's.
    let ahead = before(&batch_starts, &single_start);
    assert!((1..=2).contains(&ahead), "{ahead} of the batch's videos started before the single one");
    w.app.stop().await;
}

async fn an_accounts_priorities_order_its_jobs_and_drafts_go_first(mode: Mode) {
    let w = world(mode).await;
    let cleo = w.user("cleo").await;
    let low = w.job(&cleo, 6, json!({ "priority": "low" })).await;
    assert_eq!(low["priority"], "low");
    w.wait_started(&cleo, &low).await;
    let high = w.job(&cleo, 1, json!({ "priority": "high" })).await;
    assert_eq!(high["priority"], "high");
    let draft_path = format!("/generator/v1/templates/{}/draft", w.template.id);
    let draft = json(w.app.post_json(&draft_path, &cleo, &json!({}), &[]).await, 200).await;

    let draft_start = w.starts(&cleo, &draft).await.remove(0);
    let high_start = w.starts(&cleo, &high).await.remove(0);
    let low_starts = w.starts(&cleo, &low).await;
    assert!(draft_start < high_start, "the draft ({draft_start}) before the high job ({high_start})");
    let ahead = before(&low_starts, &high_start);
    assert!((1..=2).contains(&ahead), "{ahead} of the low job's videos started before the high one");

    // The operator caps the account at `normal`: a `high` job is lowered to it.
    w.app.service.backends.store().set_share("cleo", None, Some(Priority::Normal)).await.unwrap();
    let capped = w.job(&cleo, 1, json!({ "priority": "high" })).await;
    assert_eq!(capped["priority"], "normal", "{capped}");
    let fetched =
        json(w.app.get(&format!("/generator/v1/jobs/{}", capped["id"].as_str().unwrap()), &cleo).await, 200).await;
    assert_eq!(fetched["priority"], "normal");
    assert_eq!(w.job(&cleo, 1, json!({})).await["priority"], "normal", "the default");

    let refused = error(w.post(&cleo, 1, json!({ "priority": "urgent" })).await, 400, "error.validation_failed").await;
    assert_eq!(refused["errors"][0]["field"], "options.priority", "{refused}");
    w.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_renders_fail_where_others_succeed_leaves_the_rotation() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let dir = tempfile::tempdir().unwrap();
    // A template with a stored placeholder image: a worker must read it from the blob store.
    std::fs::create_dir_all(dir.path().join("media")).unwrap();
    media::ffmpeg(
        &["-f", "lavfi", "-i", "color=c=0x00ff00:s=64x64", "-frames:v", "1"],
        &dir.path().join("media/g.png"),
    );
    let mut document = template();
    document["clips"][0]["layers"].as_array_mut().unwrap().push(json!({
        "id": "photo", "kind": "image", "x": 200, "y": 20, "width": 64, "height": 64,
        "source": { "file": "media/g.png" }
    }));
    let file = dir.path().join("farm.json");
    std::fs::write(&file, serde_json::to_vec(&document).unwrap()).unwrap();
    let template = app.import_template(&file, None, true).await;

    // The broken worker looks for files under the wrong prefix of the bucket (a wrong
    // storage setting): every render fails there, on our side.
    let broken_dir = tempfile::tempdir().unwrap();
    let mut broken = app.config.clone();
    broken.storage.data_dir = broken_dir.path().to_path_buf();
    broken.ops.ops_listen = Some("127.0.0.1:0".parse().unwrap());
    let BlobLocation::S3 { prefix, .. } = &mut broken.storage.blob else { panic!("distributed mode stores in S3") };
    prefix.push_str("-elsewhere");
    let broken = Service::start(Role::Worker, broken).await.expect("the broken worker starts");
    let (good, _good_dir) = app.start_worker().await;
    let store = app.service.backends.store();
    let user = app.create_user("dora", None, 20).await;
    let token = app.token_for(&user).await;
    let values: Vec<Value> = (0..8).map(|i| json!({ "external_id": format!("v{i}") })).collect();
    let body = json!({ "template_id": template.id, "options": {}, "values": values });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let videos = done["videos"].as_array().unwrap();
    assert!(videos.iter().all(|v| v["status"] == "success"), "every video rendered by the good worker: {done}");

    let workers = store.workers(now_ms() - 60_000).await.unwrap();
    assert_eq!(workers.len(), 2, "{workers:?}");
    let (out, fine): (Vec<_>, Vec<_>) = workers.iter().partition(|w| w.out_since.is_some());
    assert_eq!((out.len(), fine.len()), (1, 1), "{workers:?}");
    assert!(out[0].renders_failed >= 3 && out[0].renders_ok == 0, "{:?}", out[0]);
    assert!(out[0].out_reason.as_deref().unwrap().contains("failed on this worker"), "{:?}", out[0]);
    assert_eq!(fine[0].renders_ok, 8);
    // The workers of this test run in one process: one registry, a gauge per worker.
    let metrics_url = format!("http://127.0.0.1:{}/metrics", broken.ops_port.expect("the ops port is bound"));
    let in_rotation = |worker: &str| {
        let (url, gauge) = (metrics_url.clone(), format!("reelfarm_worker_in_rotation{{worker=\"{worker}\"}}"));
        async move {
            let text = reqwest::get(url).await.unwrap().text().await.unwrap();
            let line = text.lines().find(|l| l.starts_with(&gauge)).unwrap_or_else(|| panic!("{gauge}: {text}"));
            line.ends_with(" 1")
        }
    };
    assert!(!in_rotation(&out[0].id).await);
    assert!(in_rotation(&fine[0].id).await);

    // An operator puts it back; it follows its row within the time it signs it.
    store.set_rotation(&out[0].id, None).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !in_rotation(&out[0].id).await {
        assert!(Instant::now() < deadline, "the worker did not come back into rotation");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for service in [broken, good] {
        service.stop();
        service.wait().await.unwrap();
    }
    app.stop().await;
}
