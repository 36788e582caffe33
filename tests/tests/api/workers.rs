//! Horizontally scaled workers on RabbitMQ: several share the convert queue, and a worker
//! that dies mid-conversion leaves its message to another; a worker serves probes and
//! metrics on its operations port.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use reelfarm_backends::store::{AssetStore, OutboxStore, RenderStore};
use reelfarm_domain::id::{AssetId, RenderId};
use reelfarm_tests::media;
use reelfarm_tests::{json, Mode, Role, TestApp};

/// Waits until `n` consumers are subscribed to the test's convert queue.
async fn wait_for_consumers(app: &TestApp, n: usize) {
    let queue = format!("{}.convert", app.config.bus.namespace);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = tokio::process::Command::new("rabbitmqctl")
            .args(["-q", "list_queues", "name", "consumers"])
            .output()
            .await
            .expect("rabbitmqctl runs");
        let listing = String::from_utf8_lossy(&out.stdout);
        let consumers = listing
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(name, _)| *name == queue)
            .and_then(|(_, c)| c.trim().parse::<usize>().ok());
        if consumers == Some(n) {
            return;
        }
        assert!(Instant::now() < deadline, "{queue} has {consumers:?} consumers, expected {n}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_a_batch_and_every_asset_finishes_once() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let (w1, _d1) = app.start_worker().await;
    let (w2, _d2) = app.start_worker().await;
    wait_for_consumers(&app, 2).await;
    let (_, token) = app.user_with_token("batcher").await;
    let dir = tempfile::tempdir().unwrap();
    let png = media::png_with_alpha(dir.path());

    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.push(app.upload(&token, None, &png, "image/png").await["id"].as_str().unwrap().to_string());
    }
    let mut workers = HashSet::new();
    for id in &ids {
        let asset = app.wait_for_asset(&token, id).await;
        assert_eq!(asset["status"], "finished", "{asset}");
        let stored = app.service.backends.store().asset(&AssetId::parse(id).unwrap()).await.unwrap();
        workers.insert(stored.converted_by.expect("a worker converted it"));
        let keys: HashSet<&str> = stored.renditions.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys.len(), stored.renditions.len(), "each rendition stored once");
    }
    assert_eq!(workers.len(), 2, "both workers took part: {workers:?}");
    assert_eq!(app.service.backends.store().outbox_len().await.unwrap(), 0);
    w1.stop();
    w2.stop();
    w1.wait().await.unwrap();
    w2.wait().await.unwrap();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_conversion_leaves_the_asset_to_another() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let (doomed, doomed_dir) = app.start_worker().await;
    wait_for_consumers(&app, 1).await;
    let (_, token) = app.user_with_token("patient").await;
    let dir = tempfile::tempdir().unwrap();
    let video = dir.path().join("long.mp4");
    media::ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=1920x1080:r=30:d=12",
            "-f",
            "lavfi",
            "-i",
            "sine=f=330:d=12",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
        &video,
    );
    let id = app.upload(&token, None, &video, "video/mp4").await["id"].as_str().unwrap().to_string();

    // Kill the worker once it is converting (its work directory appears).
    let work = doomed_dir.path().join("work");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "the worker never started converting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    doomed.kill().await;
    assert_eq!(
        app.service.backends.store().asset(&AssetId::parse(&id).unwrap()).await.unwrap().status.public(),
        "processing"
    );

    let (rescuer, _dir) = app.start_worker().await;
    let asset = app.wait_for_asset(&token, &id).await;
    assert_eq!(asset["status"], "finished", "{asset}");
    let heights: Vec<u64> = asset["assets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["path"].as_str().unwrap().contains("/original-"))
        .filter_map(|f| f["video"][0]["height"].as_u64())
        .collect();
    let mut sorted = heights.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![480, 720, 1080], "one set of renditions");
    rescuer.stop();
    rescuer.wait().await.unwrap();
    app.stop().await;
}

/// A 1280×720, 8 s, 25 fps template of a shape and a text (`tests/fixtures/long.json`):
/// long enough to stop its render midway.
fn long_template(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("long.json");
    std::fs::write(&file, include_str!("../../fixtures/long.json")).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_render_leaves_the_render_to_another_which_finishes_it_once() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[("REELFARM_WORKER_SLOTS", "1")]).await;
    let (doomed, _doomed_dir) = app.start_worker().await;
    let user = app.create_user("patient", None, 5).await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let template = app.import_template(&long_template(dir.path()), Some(&user), false).await;
    let body = serde_json::json!({ "template_id": template.id, "options": {}, "values": [{ "external_id": "x" }] });
    let created = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let job_id = created["id"].as_str().unwrap();

    // Kill the worker once frames are being rendered.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = json(app.get(&format!("/generator/v1/jobs/{job_id}"), &token).await, 200).await;
        let progress = job["videos"][0]["progress"].as_u64().unwrap();
        if job["videos"][0]["status"] == "started" && progress > 0 {
            assert!(progress < 100, "the render was too quick to interrupt");
            break;
        }
        assert!(Instant::now() < deadline, "the render never started: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    doomed.kill().await;

    let (rescuer, _dir) = app.start_worker().await;
    let job = app.wait_for_job(&token, job_id).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "success", "{job}");
    let probe = media::probe_url(video["url"].as_str().unwrap(), dir.path()).await;
    assert!((probe.duration.unwrap() - 8.0).abs() < 0.05, "{:?}", probe.duration);
    let render =
        app.service.backends.store().render(&RenderId::parse(video["id"].as_str().unwrap()).unwrap()).await.unwrap();
    assert_eq!(render.attempts, 2, "rendered again after the kill, and only once more");
    let credits = json(app.get("/generator/v1/users/me/credits", &token).await, 200).await;
    assert_eq!(credits["credits"], 4, "charged once");
    rescuer.stop();
    rescuer.wait().await.unwrap();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_an_ops_port_serves_probes_and_metrics() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = app.config.clone();
    config.storage.data_dir = dir.path().to_path_buf();
    config.ops.ops_listen = Some("127.0.0.1:0".parse().unwrap());
    let worker = reelfarm_server::serve::Service::start(Role::Worker, config).await.expect("the worker starts");
    assert_eq!(worker.api_port, None);
    let ops = format!("http://127.0.0.1:{}", worker.ops_port.expect("the ops port is bound"));

    // It converts an upload, so its metrics have something to show.
    wait_for_consumers(&app, 1).await;
    let (_, token) = app.user_with_token("operator").await;
    let png = media::png_with_alpha(dir.path());
    let id = app.upload(&token, None, &png, "image/png").await["id"].as_str().unwrap().to_string();
    assert_eq!(app.wait_for_asset(&token, &id).await["status"], "finished");

    let get = |path: &str| reqwest::get(format!("{ops}{path}"));
    assert_eq!(json(get("/healthz").await.unwrap(), 200).await, serde_json::json!({"status": "ok"}));
    let ready = json(get("/readyz").await.unwrap(), 200).await;
    assert_eq!(ready["status"], "ok", "{ready}");
    assert_eq!(ready["checks"].as_object().unwrap().len(), 4, "{ready}");
    let metrics = get("/metrics").await.unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(metrics.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = metrics.text().await.unwrap();
    let consumed = r#"reelfarm_bus_consumed_total{queue="convert",settle="ack"}"#;
    assert!(text.lines().any(|l| l.starts_with(consumed)), "{text}");
    let unknown = json(get("/api2/v1/libraries").await.unwrap(), 404).await;
    assert_eq!(unknown["key"], "error.not_found", "only the operations endpoints: {unknown}");

    worker.stop();
    worker.wait().await.unwrap();
    assert!(get("/healthz").await.is_err(), "the port is closed with the worker");
    app.stop().await;
}
