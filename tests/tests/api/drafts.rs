//! Drafts: `POST /generator/v1/templates/{id}/draft` renders the whole
//! template fast and small, for free; the draft is polled like a job, not listed with the
//! jobs, and deleted with its video a day later.

use reelfarm_domain::id::now_ms;
use reelfarm_tests::media::probe_url;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(drafts_are_free_small_unlisted_and_deleted_after_a_day);

const TITLE: &str = "3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b";

/// 1280×720 at 30 fps, 2 s: a backdrop and a title variable.
fn document() -> Value {
    json!({
        "version": 1,
        "name": "Drafted",
        "canvas": { "width": 1280, "height": 720, "fps": 30 },
        "clips": [{
            "id": "only",
            "duration": 2,
            "layers": [
                { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 1280, "height": 720, "color": "#304050" },
                {
                    "id": "title", "kind": "text", "x": 40, "y": 300, "width": 1200, "height": 120,
                    "text": "Title", "font": { "family": "Liberation Sans", "size": 80 },
                    "variable": { "id": TITLE, "name": "Title" }
                }
            ]
        }]
    })
}

/// Frames of the video at `url` and their rate, as ffprobe counts them.
async fn frames_and_rate(url: &str, dir: &std::path::Path) -> (u32, String) {
    let file = dir.join("draft.mp4");
    std::fs::write(&file, reqwest::get(url).await.unwrap().bytes().await.unwrap()).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v", "-count_frames"])
        .args(["-show_entries", "stream=nb_read_frames,r_frame_rate", "-of", "csv=p=0"])
        .arg(&file)
        .output()
        .expect("ffprobe runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let (rate, frames) = text.trim().split_once(',').unwrap_or_else(|| panic!("ffprobe said {text:?}"));
    (frames.parse().unwrap(), rate.to_string())
}

async fn drafts_are_free_small_unlisted_and_deleted_after_a_day(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("drafter").await;
    let made =
        json(app.post_json("/generator/v1/templates", &token, &json!({ "json": document() }), &[]).await, 200).await;
    let id = made["id"].as_str().unwrap();
    let path = format!("/generator/v1/templates/{id}/draft");

    // Free: the user has no credit at all.
    let draft =
        json(app.post_json(&path, &token, &json!({ "values": { TITLE: "Draft words" } }), &[]).await, 200).await;
    assert_eq!((draft["draft"].as_bool(), draft["videos"].as_array().unwrap().len()), (Some(true), 1), "{draft}");
    let done = app.wait_for_job(&token, draft["id"].as_str().unwrap()).await;
    let video = &done["videos"][0];
    assert_eq!(video["status"], "success", "{done}");
    let dir = tempfile::tempdir().unwrap();
    let url = video["url"].as_str().unwrap();
    let probe = probe_url(url, dir.path()).await;
    assert_eq!((probe.width, probe.height), (Some(854), Some(480)), "480p");
    assert!((probe.duration.unwrap() - 2.0).abs() < 0.05, "the whole video: {:?}", probe.duration);
    assert_eq!(frames_and_rate(url, dir.path()).await, (30, "15/1".to_string()), "15 fps");
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 0);

    // Not with the jobs; bad values are named; no body is a draft of the defaults.
    assert_eq!(json(app.get("/generator/v1/jobs", &token).await, 200).await, json!([]));
    assert_eq!(json(app.get(&format!("/generator/v1/templates/{id}/jobs"), &token).await, 200).await, json!([]));
    let body = error(
        app.post_json(&path, &token, &json!({ "values": { TITLE: 7 } }), &[]).await,
        400,
        "error.validation_failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], format!("values.{TITLE}"));
    let body =
        error(app.post_json(&path, &token, &json!({ "values": "x" }), &[]).await, 400, "error.validation_failed").await;
    assert_eq!(body["errors"][0]["field"], "values");
    let plain = json(app.post_json(&path, &token, &json!({}), &[]).await, 200).await;
    app.wait_for_job(&token, plain["id"].as_str().unwrap()).await;
    let (_, stranger) = app.user_with_token("stranger").await;
    error(app.post_json(&path, &stranger, &json!({}), &[]).await, 404, "error.not_found").await;

    // A day later housekeeping deletes both drafts with their videos.
    let backends = &app.service.backends;
    let day_later = now_ms() + reelfarm_backends::store::DRAFT_RETENTION_MS + 1;
    let deleted =
        reelfarm_backends::housekeeping::prune_drafts(backends.store(), backends.blobs(), day_later).await.unwrap();
    assert_eq!(deleted, 2);
    error(
        app.get(&format!("/generator/v1/jobs/{}", draft["id"].as_str().unwrap()), &token).await,
        404,
        "error.not_found",
    )
    .await;
    assert_eq!(reqwest::get(url).await.unwrap().status(), 404, "the video is gone");
    app.stop().await;
}
