//! Templates made and changed through the API: create, save as versions,
//! render the current one, restore, duplicate, delete; every problem of a document at its
//! JSON path; only the owner changes a template.

use std::time::{Duration, Instant};

use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, error, json, Mode, Role, TestApp};
use serde_json::{json, Value};

both_modes!(
    templates_are_made_saved_versioned_and_rendered_at_their_current_version,
    every_problem_of_a_saved_document_is_named_at_its_json_path,
    only_the_owner_changes_a_template_and_a_deleted_one_keeps_its_jobs,
);

const TITLE_VARIABLE: &str = "0f8e7d6c-5b4a-4932-8170-6f5e4d3c2b1a";
const PHOTO_VARIABLE: &str = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

/// A 320×240 template of one clip of `seconds`: a backdrop, a photo variable from the
/// library asset `photo` and a text variable with the default `title`.
fn document(name: &str, seconds: f64, title: &str, photo: &str) -> Value {
    json!({
        "version": 1,
        "name": name,
        "canvas": { "width": 320, "height": 240, "fps": 10 },
        "clips": [{
            "id": "only",
            "duration": seconds,
            "layers": [
                { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 320, "height": 240, "color": "#203040" },
                {
                    "id": "photo", "kind": "image", "x": 10, "y": 10, "width": 120, "height": 90,
                    "source": { "asset": photo },
                    "variable": { "id": PHOTO_VARIABLE, "name": "Photo" }
                },
                {
                    "id": "title", "kind": "text", "x": 10, "y": 150, "width": 300, "height": 60,
                    "text": title, "font": { "family": "Liberation Sans", "size": 28 },
                    "variable": { "id": TITLE_VARIABLE, "name": "Title" }
                }
            ]
        }]
    })
}

/// A finished image asset of the user with `token`.
async fn photo(app: &TestApp, token: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let record = app.upload(token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    let asset = app.wait_for_asset(token, record["metadata"]["id"].as_str().unwrap()).await;
    assert_eq!(asset["status"], "finished", "{asset}");
    asset["metadata"]["id"].as_str().unwrap().to_string()
}

async fn put_json(app: &TestApp, path: &str, token: &str, body: &Value) -> reqwest::Response {
    app.client.put(app.url(path)).bearer_auth(token).json(body).send().await.unwrap()
}

async fn delete(app: &TestApp, path: &str, token: &str) -> reqwest::Response {
    app.client.delete(app.url(path)).bearer_auth(token).send().await.unwrap()
}

/// Asserts a video lasts `expected` seconds (within the AAC padding of the container).
fn assert_seconds(actual: Option<f64>, expected: f64) {
    assert!(actual.is_some_and(|d| (d - expected).abs() < 0.05), "{actual:?} s, not {expected} s");
}

/// Renders one video of template `id` with its defaults; returns its duration in seconds.
async fn rendered_seconds(app: &TestApp, token: &str, id: &str) -> Option<f64> {
    let body = json!({ "template_id": id, "options": {}, "values": [{ "template_variables": {} }] });
    let job = json(app.post_json("/generator/v1/jobs", token, &body, &[]).await, 200).await;
    let job = app.wait_for_job(token, job["id"].as_str().unwrap()).await;
    let video = &job["videos"][0];
    assert_eq!(video["status"], "success", "{job}");
    let dir = tempfile::tempdir().unwrap();
    probe_url(video["url"].as_str().unwrap(), dir.path()).await.duration
}

/// Polls template `id` until its thumb is the one rendered for `version` (60 s at most).
async fn wait_for_thumb(app: &TestApp, token: &str, id: &str, version: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t = json(app.get(&format!("/generator/v1/templates/{id}"), token).await, 200).await;
        if t["thumb"].as_str().unwrap().contains(&format!("/v{version}/thumb.jpg")) {
            return t;
        }
        assert!(Instant::now() < deadline, "no thumb of version {version} after 60 s: {t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn templates_are_made_saved_versioned_and_rendered_at_their_current_version(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("maker", None, 10).await;
    let token = app.token_for(&user).await;
    let asset = photo(&app, &token).await;

    let made = json(
        app.post_json(
            "/generator/v1/templates",
            &token,
            &json!({ "json": document("Promo", 1.0, "Hello", &asset) }),
            &[],
        )
        .await,
        200,
    )
    .await;
    let id = made["id"].as_str().unwrap().to_string();
    assert_eq!((made["version"].as_i64(), made["name"].as_str()), (Some(1), Some("Promo")));
    assert_eq!((made["owner"].as_str(), made["public"].as_bool()), (Some(user.id.as_str()), Some(false)));
    assert_eq!(made["duration"].as_f64(), Some(1.0));
    assert_eq!(made["json"]["clips"][0]["layers"][2]["text"], "Hello");
    let variables: Vec<(&str, &str)> = made["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["id"].as_str().unwrap(), v["type"].as_str().unwrap()))
        .collect();
    assert_eq!(variables, [(PHOTO_VARIABLE, "image"), (TITLE_VARIABLE, "text")]);
    assert_eq!(made["variables"][0]["requirements"], json!({ "width": 120, "height": 90 }));
    let listed = json(app.get("/generator/v1/templates", &token).await, 200).await;
    assert_eq!(listed[0]["id"], made["id"], "{listed}");

    // A worker renders its thumb and preview from the defaults.
    let shown = wait_for_thumb(&app, &token, &id, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let thumb = probe_url(shown["thumb"].as_str().unwrap(), dir.path()).await;
    assert_eq!((thumb.format.as_str(), thumb.width, thumb.height), ("jpeg", Some(320), Some(240)));
    let preview = probe_url(shown["preview"].as_str().unwrap(), dir.path()).await;
    assert_eq!((preview.video_codec.as_deref(), preview.width), (Some("h264"), Some(320)));
    assert_seconds(rendered_seconds(&app, &token, &id).await, 1.0);

    // A save is version 2, and jobs render it: two seconds now.
    let path = format!("/generator/v1/templates/{id}");
    let v2 = json!({ "json": document("Promo long", 2.0, "Hello again", &asset), "base_version": 1 });
    let saved = json(put_json(&app, &path, &token, &v2).await, 200).await;
    assert_eq!((saved["version"].as_i64(), saved["name"].as_str()), (Some(2), Some("Promo long")));
    assert_eq!(saved["variables"][1]["default"], "<p>Hello again</p>");
    let stale = error(put_json(&app, &path, &token, &v2).await, 409, "error.conflict").await;
    assert!(stale["message"].as_str().unwrap().contains("version 2"), "{stale}");
    assert_seconds(rendered_seconds(&app, &token, &id).await, 2.0);
    wait_for_thumb(&app, &token, &id, 2).await;
    // The replaced thumb is removed (right after the new one is recorded).
    let deadline = Instant::now() + Duration::from_secs(10);
    while reqwest::get(shown["thumb"].as_str().unwrap()).await.unwrap().status() != 404 {
        assert!(Instant::now() < deadline, "the thumb of version 1 is still served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Versions, newest first; one with its document; restoring version 1 makes version 3.
    let versions = json(app.get(&format!("{path}/versions"), &token).await, 200).await;
    let summary: Vec<(i64, &str, bool)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["version"].as_i64().unwrap(), v["name"].as_str().unwrap(), v["current"].as_bool().unwrap()))
        .collect();
    assert_eq!(summary, [(2, "Promo long", true), (1, "Promo", false)]);
    assert!(versions[0].get("json").is_none() && versions[0]["saved_by"] == user.id.as_str(), "{versions}");
    let first = json(app.get(&format!("{path}/versions/1"), &token).await, 200).await;
    assert_eq!(first["json"]["clips"][0]["duration"], 1.0);
    for missing in ["3", "0", "x"] {
        error(app.get(&format!("{path}/versions/{missing}"), &token).await, 404, "error.not_found").await;
    }
    let restored = json(app.post_json(&format!("{path}/versions/1/restore"), &token, &json!({}), &[]).await, 200).await;
    assert_eq!((restored["version"].as_i64(), restored["name"].as_str()), (Some(3), Some("Promo")));
    assert_seconds(rendered_seconds(&app, &token, &id).await, 1.0);
    let paged = json(app.get(&format!("{path}/versions?limit=1&page=2"), &token).await, 200).await;
    assert_eq!(paged[0]["version"], 2, "{paged}");
    app.stop().await;
}

async fn every_problem_of_a_saved_document_is_named_at_its_json_path(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("author").await;
    let (_, other_token) = app.user_with_token("other").await;
    let asset = photo(&app, &token).await;
    let others = photo(&app, &other_token).await;
    let create = |body: Value| {
        let (app, token) = (&app, &token);
        async move { app.post_json("/generator/v1/templates", token, &body, &[]).await }
    };
    let fields = |body: &Value| -> Vec<(String, String)> {
        body["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["field"].as_str().unwrap().to_string(), e["key"].as_str().unwrap().to_string()))
            .collect()
    };

    // The body itself.
    let body = error(create(json!({})).await, 400, "error.validation_failed").await;
    assert_eq!(fields(&body)[0].0, "json");
    let body = error(create(json!({ "json": {}, "base_version": "one" })).await, 400, "error.validation_failed").await;
    assert_eq!(fields(&body)[0].0, "base_version");
    let res = app.client.post(app.url("/generator/v1/templates")).bearer_auth(&token);
    let res = res.header("content-type", "application/json").body("{not json").send().await.unwrap();
    error(res, 400, "error.invalid_request").await;

    // Shape: the first mismatch; rules: every violation.
    let mut doc = document("Bad", 1.0, "Hi", &asset);
    doc["clips"][0]["layers"][0]["colour"] = json!("#fff");
    let body = error(create(json!({ "json": doc })).await, 400, "error.validation_failed").await;
    assert_eq!(fields(&body), [("json.clips[0].layers[0].colour".into(), "error.template_malformed".into())]);
    let mut doc = document("Bad", 1.0, "Hi", &asset);
    doc["canvas"]["fps"] = json!(120);
    doc["clips"][0]["layers"][2]["font"]["family"] = json!("Comic Sans");
    let body = error(create(json!({ "json": doc })).await, 400, "error.validation_failed").await;
    let expected = [
        ("json.canvas.fps".to_string(), "error.template_invalid".to_string()),
        ("json.clips[0].layers[2].font.family".into(), "error.template_invalid".into()),
    ];
    assert_eq!(fields(&body), expected, "{body}");
    assert!(body["errors"][1]["message"].as_str().unwrap().contains("Comic Sans"), "{body}");
    // The families that may be named are the renderer's own.
    let fonts = json(app.get("/generator/v1/fonts", &token).await, 200).await;
    let families: Vec<&str> = fonts.as_array().unwrap().iter().map(|f| f["family"].as_str().unwrap()).collect();
    assert_eq!(families, ["Liberation Sans", "Liberation Serif", "Liberation Mono"]);
    assert_eq!(fonts[0]["styles"], json!(["regular", "bold", "italic", "bold italic"]));
    assert!(body["errors"][1]["message"].as_str().unwrap().contains(families[0]), "the error offers them");

    // Sources: someone else's asset, a placeholder file the template does not have, an
    // address the outbound policy refuses (a loopback address not on the allow list).
    let mut doc = document("Bad", 1.0, "Hi", &others);
    doc["clips"][0]["layers"].as_array_mut().unwrap().extend([
        json!({ "id": "file", "kind": "image", "x": 0, "y": 0, "width": 10, "height": 10, "source": { "file": "media/a.png" } }),
        json!({ "id": "far", "kind": "image", "x": 0, "y": 0, "width": 10, "height": 10,
                "source": { "url": "http://127.0.0.9/a.png" } }),
    ]);
    let body = error(create(json!({ "json": doc })).await, 400, "error.validation_failed").await;
    let found = fields(&body);
    assert_eq!(found.len(), 3, "{body}");
    assert_eq!(found[0], ("json.clips[0].layers[1].source.asset".into(), "error.unknown_asset".into()));
    assert_eq!(found[1], ("json.clips[0].layers[3].source.file".into(), "error.unknown_file".into()));
    assert_eq!(found[2].0, "json.clips[0].layers[4].source.url");
    let listed = json(app.get("/generator/v1/templates", &token).await, 200).await;
    assert_eq!(listed, json!([]), "nothing was made");
    app.stop().await;
}

async fn only_the_owner_changes_a_template_and_a_deleted_one_keeps_its_jobs(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, ann) = app.user_with_token("ann").await;
    let (bob_user, bob) = app.user_with_token("bob").await;
    let asset = photo(&app, &ann).await;
    let doc = document("Ann's", 1.0, "Hi", &asset);
    let made = json(app.post_json("/generator/v1/templates", &ann, &json!({ "json": doc }), &[]).await, 200).await;
    let path = format!("/generator/v1/templates/{}", made["id"].as_str().unwrap());

    // Bob cannot see it; once it is public (shared with everyone) he sees but cannot change it.
    error(put_json(&app, &path, &bob, &json!({ "json": doc })).await, 404, "error.not_found").await;
    let dir = tempfile::tempdir().unwrap();
    let public = {
        let file = dir.path().join("public.json");
        std::fs::write(&file, serde_json::to_vec(&document("Everyone's", 1.0, "Hi", &asset)).unwrap()).unwrap();
        app.import_template(&file, None, true).await
    };
    let public_path = format!("/generator/v1/templates/{}", public.id);
    error(put_json(&app, &public_path, &bob, &json!({ "json": doc })).await, 403, "error.forbidden").await;
    error(delete(&app, &public_path, &bob).await, 403, "error.forbidden").await;
    error(app.get(&format!("{public_path}/versions"), &bob).await, 403, "error.forbidden").await;

    // A duplicate is his, at version 1, with a name that says what it is.
    let copy = json(app.post_json(&format!("{public_path}/duplicate"), &bob, &json!({}), &[]).await, 200).await;
    assert_eq!((copy["name"].as_str(), copy["version"].as_i64()), (Some("Everyone's (copy)"), Some(1)));
    assert_eq!(
        (copy["owner"].as_str(), copy["json"]["name"].as_str()),
        (Some(bob_user.id.as_str()), Some("Everyone's (copy)"))
    );
    assert_ne!(copy["id"], json!(public.id.as_str()));
    let copy_path = format!("/generator/v1/templates/{}", copy["id"].as_str().unwrap());
    let mine = json!({ "json": document("Bob's", 1.0, "Yo", &asset) });
    let body = error(put_json(&app, &copy_path, &bob, &mine).await, 400, "error.validation_failed").await;
    assert_eq!(body["errors"][0]["key"], "error.unknown_asset", "Ann's asset is not his: {body}");

    // Deleting: gone from lists, reads and new jobs; its jobs stay.
    let job = json!({ "template_id": made["id"], "options": { "create_render": false, "create_project": true },
                      "values": [{ "template_variables": {} }] });
    let job = json(app.post_json("/generator/v1/jobs", &ann, &job, &[]).await, 200).await;
    assert_eq!(delete(&app, &path, &ann).await.status(), 204);
    error(app.get(&path, &ann).await, 404, "error.not_found").await;
    error(delete(&app, &path, &ann).await, 404, "error.not_found").await;
    let listed = json(app.get("/generator/v1/templates", &ann).await, 200).await;
    assert!(!listed.as_array().unwrap().iter().any(|t| t["id"] == made["id"]), "{listed}");
    let again = json!({ "template_id": made["id"], "options": {}, "values": [{ "template_variables": {} }] });
    error(app.post_json("/generator/v1/jobs", &ann, &again, &[]).await, 404, "error.not_found").await;
    let kept = json(app.get(&format!("/generator/v1/jobs/{}", job["id"].as_str().unwrap()), &ann).await, 200).await;
    assert_eq!(kept["status"], "finished", "{kept}");
    let of_template = json(app.get(&format!("{path}/jobs"), &ann).await, 200).await;
    assert_eq!(of_template[0]["id"], job["id"], "{of_template}");
    app.stop().await;
}

/// A job renders the version it was made against, even when the template is saved before
/// a worker takes it (distributed: the worker starts after the save).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_renders_the_version_it_was_made_against() {
    let app = TestApp::spawn_role(Mode::Distributed, Role::Api, &[]).await;
    let user = app.create_user("pinned", None, 10).await;
    let token = app.token_for(&user).await;
    let (worker, _dir) = app.start_worker().await;
    let asset = photo(&app, &token).await;
    worker.stop();
    worker.wait().await.unwrap();

    let made = json(
        app.post_json("/generator/v1/templates", &token, &json!({ "json": document("Pin", 1.0, "A", &asset) }), &[])
            .await,
        200,
    )
    .await;
    let id = made["id"].as_str().unwrap();
    let body = json!({ "template_id": id, "options": {}, "values": [{ "template_variables": {} }] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    let path = format!("/generator/v1/templates/{id}");
    json(put_json(&app, &path, &token, &json!({ "json": document("Pin", 2.0, "B", &asset) })).await, 200).await;

    let (_worker, _dir) = app.start_worker().await;
    let job = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let video = probe_url(job["videos"][0]["url"].as_str().unwrap(), dir.path()).await;
    assert_seconds(video.duration, 1.0);
    assert_seconds(rendered_seconds(&app, &token, id).await, 2.0);
    app.stop().await;
}
