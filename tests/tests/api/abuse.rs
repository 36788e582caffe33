//! The abuse suite: what one tenant of a shared deployment could do to take the farm down
//! or take it for free, each tried against `serve all` in both modes, and afterwards the
//! same process still renders another account's video. Templates too long or too large are
//! refused when saved; credits follow a video's length and size (and a dry run says so
//! beforehand); drafts have a budget; decoder bombs fail alone; a sign-in flood is turned
//! away before any hashing.

use std::path::Path;

use reelfarm_tests::files::FileServer;
use reelfarm_tests::{both_modes, error, json, media, Mode, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

both_modes!(
    hostile_templates_are_refused_when_saved_and_the_farm_renders_on,
    credits_follow_length_and_size_and_a_dry_run_creates_nothing,
    a_converted_video_is_estimated_at_the_size_it_is_decoded,
    free_work_has_a_budget_and_decoder_bombs_fail_alone,
    a_lottie_that_builds_gigabytes_fails_alone_in_its_sandbox,
    a_render_whose_source_builds_gigabytes_fails_alone_in_its_sandbox,
    a_render_out_of_its_time_keeps_its_credit,
    spreadsheets_of_a_million_columns_are_refused_while_others_are_answered,
);

const IMAGE: &str = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

/// A `side`×`side` canvas at 5 fps: one clip of `seconds` with `shapes` shape layers of
/// `box_side` px.
fn document(seconds: f64, side: u32, shapes: usize, box_side: u32) -> Value {
    let layers: Vec<Value> = (0..shapes)
        .map(|i| {
            json!({ "id": format!("s{i}"), "kind": "shape", "x": 0, "y": 0, "width": box_side, "height": box_side,
                         "color": "#203040" })
        })
        .collect();
    json!({ "version": 1, "name": "Abuse", "canvas": { "width": side, "height": side, "fps": 5 },
            "clips": [{ "id": "c", "duration": seconds, "layers": layers }] })
}

/// Saves `document` as a template of the caller's: the response.
async fn save(app: &TestApp, token: &str, document: &Value) -> reqwest::Response {
    app.post_json("/generator/v1/templates", token, &json!({ "json": document }), &[]).await
}

/// The `(field, key)` of each error of a 400 body.
fn fields(body: &Value) -> Vec<(String, String)> {
    let errors = body["errors"].as_array().unwrap_or_else(|| panic!("no errors: {body}"));
    errors.iter().map(|e| (e["field"].as_str().unwrap().into(), e["key"].as_str().unwrap().into())).collect()
}

/// Another account, its token and the job body of one short video of its own template.
async fn bystander(app: &TestApp, name: &str) -> (String, Value) {
    let user = app.create_user(name, None, 1).await;
    let token = app.token_for(&user).await;
    let made = json(save(app, &token, &document(1.0, 64, 1, 64)).await, 200).await;
    (token, json!({ "template_id": made["id"], "options": {}, "values": [{}] }))
}

/// The job `body` renders to the end in the same process.
async fn renders(app: &TestApp, token: &str, body: &Value) {
    let job = json(app.post_json("/generator/v1/jobs", token, body, &[]).await, 200).await;
    let done = app.wait_for_job(token, job["id"].as_str().unwrap()).await;
    assert_eq!(done["videos"][0]["status"], "success", "{done}");
}

/// Another account's one short video renders to the end in the same process.
async fn another_account_renders(app: &TestApp, name: &str) {
    let (token, body) = bystander(app, name).await;
    renders(app, &token, &body).await;
}

async fn hostile_templates_are_refused_when_saved_and_the_farm_renders_on(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("mallory").await;

    // A clip of a billion seconds: refused at the clip, before any render.
    let res = save(&app, &token, &document(1e9, 480, 1, 100)).await;
    let body = error(res, 400, "error.validation_failed").await;
    assert_eq!(fields(&body), [("json.clips[0].duration".to_string(), "error.limit_exceeded".to_string())]);
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("at most 3600 s"), "{body}");

    // Forty layers of 16,000 px on a 480 px canvas: each box is named.
    let body = error(save(&app, &token, &document(1.0, 480, 40, 16_000)).await, 400, "error.validation_failed").await;
    let named = fields(&body);
    assert_eq!(named.len(), 80, "{body}");
    assert_eq!(named[0], ("json.clips[0].layers[0].width".to_string(), "error.limit_exceeded".to_string()));

    // Fifty templates an hour long saved at once are fine: their previews cover the first
    // seconds only, and they wait in their own account's share, so another account's video
    // asked for right after renders before most of them.
    let (neighbour, short) = bystander(&app, "bystander").await;
    let saves = (0..50).map(|_| async { json(save(&app, &token, &document(3600.0, 480, 1, 16)).await, 200).await });
    let long = futures::future::join_all(saves).await;
    renders(&app, &neighbour, &short).await;
    let mut previews = Vec::new();
    for t in &long {
        let t =
            json(app.get(&format!("/generator/v1/templates/{}", t["id"].as_str().unwrap()), &token).await, 200).await;
        previews.extend(t["preview"].as_str().filter(|u| !u.is_empty()).map(str::to_string));
    }
    assert!(previews.len() <= 40, "{} of 50 previews were made first", previews.len());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let id = long[0]["id"].as_str().unwrap();
    let preview = loop {
        let t = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
        if let Some(url) = t["preview"].as_str().filter(|u| !u.is_empty()) {
            break url.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no preview after 60 s: {t}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let dir = tempfile::tempdir().unwrap();
    let probed = media::probe_url(&preview, dir.path()).await;
    assert!((probed.duration.unwrap() - 10.0).abs() < 0.3, "a 10 s preview: {:?}", probed.duration);
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 0, "all free");
}

async fn credits_follow_length_and_size_and_a_dry_run_creates_nothing(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("payer", None, 3).await;
    let token = app.token_for(&user).await;
    let mut long = document(61.0, 64, 0, 0);
    long["clips"][0]["layers"] = json!([{ "id": "photo", "kind": "image", "x": 0, "y": 0, "width": 64, "height": 64,
                                          "source": { "url": "http://127.0.0.1:1/photo.png" },
                                          "variable": { "id": IMAGE, "name": "Photo" } }]);
    let made = json(save(&app, &token, &long).await, 200).await;
    let job =
        |options: Value, values: Value| json!({ "template_id": made["id"], "options": options, "values": values });

    // 61 s takes two credits; at 1080p too, and three videos take six. Nothing is made.
    let quote = json(
        app.post_json("/generator/v1/jobs", &token, &job(json!({ "dry_run": true }), json!([{}])), &[]).await,
        200,
    )
    .await;
    assert_eq!((quote["dry_run"].as_bool(), quote["credits"].as_i64()), (Some(true), Some(2)), "{quote}");
    assert_eq!((quote["available_credits"].as_i64(), quote["sufficient"].as_bool()), (Some(3), Some(true)));
    let video = &quote["videos"][0];
    assert_eq!(
        (video["frames"].as_u64(), video["width"].as_u64(), video["duration"].as_f64()),
        (Some(305), Some(64), Some(61.0))
    );
    assert!(video["cpu_seconds"].as_f64().unwrap() > 0.0 && video["memory_bytes"].as_u64().unwrap() > 0, "{video}");
    let three = job(json!({ "dry_run": true, "quality": "1080p" }), json!([{}, {}, {}]));
    let quote = json(app.post_json("/generator/v1/jobs", &token, &three, &[]).await, 200).await;
    assert_eq!((quote["credits"].as_i64(), quote["sufficient"].as_bool()), (Some(6), Some(false)), "{quote}");
    assert_eq!(quote["videos"][0]["width"], 1080);
    assert_eq!(json(app.get("/generator/v1/jobs", &token).await, 200).await, json!([]));

    // A thousand videos each naming another asset nobody has: looked up together, refused
    // with the first hundred problems, while another account is answered.
    let (neighbour, _) = bystander(&app, "neighbour").await;
    let unknown: Vec<Value> =
        (0..1000).map(|_| json!({ "template_variables": { IMAGE: uuid::Uuid::new_v4().to_string() } })).collect();
    let many = job(json!({}), Value::Array(unknown));
    let (res, ()) =
        tokio::join!(app.post_json("/generator/v1/jobs", &token, &many, &[]), answers_at_once(&app, &neighbour));
    let body = error(res, 400, "error.validation_failed").await;
    assert_eq!(body["errors"].as_array().unwrap().len(), 100, "{body}");
    assert_eq!(body["errors"][0]["key"], "error.unknown_asset", "{body}");
    assert!(body["message"].as_str().unwrap().ends_with(" and 900 more"), "{}", body["message"]);

    // The real job takes two; a second does not fit (402); the failed render gives both back.
    let values = json!([{ "template_variables": { IMAGE: "http://127.0.0.1:1/other.png" } }]);
    let first =
        json(app.post_json("/generator/v1/jobs", &token, &job(json!({}), values.clone()), &[]).await, 200).await;
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 1);
    let res = app.post_json("/generator/v1/jobs", &token, &job(json!({}), values), &[]).await;
    error(res, 402, "error.generator_contract_exceeded").await;
    let done = app.wait_for_job(&token, first["id"].as_str().unwrap()).await;
    assert_eq!(done["videos"][0]["status"], "failed", "{done}");
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 3, "refunded");
}

/// A GIF of a `side`×`side` picture with `frames` frames of one pixel each (each frame is
/// still the whole picture once decoded): a few bytes a frame.
fn gif_bomb(path: &Path, side: u16, frames: usize) {
    let mut gif = b"GIF89a".to_vec();
    gif.extend(side.to_le_bytes());
    gif.extend(side.to_le_bytes());
    gif.extend([0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff]);
    for _ in 0..frames {
        gif.extend([0x21, 0xf9, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00]);
        gif.extend([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]);
        gif.extend([0x02, 0x02, 0x44, 0x01, 0x00]);
    }
    gif.push(0x3b);
    std::fs::write(path, gif).unwrap();
}

async fn a_converted_video_is_estimated_at_the_size_it_is_decoded(mode: Mode) {
    const VIDEO: &str = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e";
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("estimator").await;
    let dir = tempfile::tempdir().unwrap();
    let clip = app.upload(&token, None, &media::mp4_with_audio(dir.path()), "video/mp4").await;
    let clip = app.wait_for_asset(&token, clip["id"].as_str().unwrap()).await;
    assert_eq!(clip["status"], "finished", "{clip}");
    // A 720p clip played in a 16-pixel box decodes its smallest rendition, not 16 pixels.
    let mut small = document(2.0, 64, 0, 0);
    small["clips"][0]["layers"] = json!([{ "id": "clip", "kind": "video", "x": 0, "y": 0, "width": 16, "height": 16,
                                           "source": { "url": "http://127.0.0.1:1/clip.mp4" },
                                           "variable": { "id": VIDEO, "name": "Clip" } }]);
    let made = json(save(&app, &token, &small).await, 200).await;
    let cpu = |values: Value| {
        let body = json!({ "template_id": made["id"], "options": { "dry_run": true }, "values": [values] });
        let (app, token) = (&app, &token);
        async move {
            let quote = json(app.post_json("/generator/v1/jobs", token, &body, &[]).await, 200).await;
            quote["videos"][0]["cpu_seconds"].as_f64().unwrap_or_else(|| panic!("{quote}"))
        }
    };
    let unknown = cpu(json!({})).await;
    let known = cpu(json!({ "template_variables": { VIDEO: clip["id"] } })).await;
    assert!(known > unknown, "an address's size is not known ({unknown} s); the asset's is ({known} s)");
}

async fn free_work_has_a_budget_and_decoder_bombs_fail_alone(mode: Mode) {
    let settings = [("REELFARM_DRAFT_MINUTES", "1"), ("REELFARM_MAX_ANIMATION_PIXELS", "100000000")];
    let app = TestApp::spawn_with(mode, &settings).await;
    let (_, token) = app.user_with_token("freeloader").await;

    // Drafts: 40 s fit the minute of this hour once: of four asked for at once, one is
    // made and the others are refused until it ages out; one longer than the budget is
    // refused outright.
    let made = json(save(&app, &token, &document(40.0, 64, 1, 64)).await, 200).await;
    let path = format!("/generator/v1/templates/{}/draft", made["id"].as_str().unwrap());
    let empty = json!({});
    let asked = (0..4).map(|_| app.post_json(&path, &token, &empty, &[]));
    let mut answers = futures::future::join_all(asked).await;
    answers.sort_by_key(|res| res.status());
    let statuses: Vec<u16> = answers.iter().map(|res| res.status().as_u16()).collect();
    assert_eq!(statuses, [200, 429, 429, 429]);
    let res = answers.pop().unwrap();
    let wait: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((3000..=3600).contains(&wait), "retry after {wait} s");
    error(res, 429, "error.rate_limited").await;
    let longer = json(save(&app, &token, &document(90.0, 64, 1, 64)).await, 200).await;
    let path = format!("/generator/v1/templates/{}/draft", longer["id"].as_str().unwrap());
    let body = error(app.post_json(&path, &token, &json!({}), &[]).await, 400, "error.validation_failed").await;
    assert_eq!(body["errors"][0]["key"], "error.limit_exceeded", "{body}");

    // Decoder bombs: each upload fails with its reason, nothing else is held up.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut repeated = media::lottie_solid("#ffffff");
    repeated["layers"] = json!([{ "ty": 4, "ind": 1, "ip": 0, "op": 10, "st": 0, "ks": repeated["layers"][0]["ks"],
        "shapes": [{ "ty": "rc", "d": 1, "s": { "a": 0, "k": [10, 10] }, "p": { "a": 0, "k": [50, 50] }, "r": { "a": 0, "k": 0 } },
                   { "ty": "rp", "c": { "a": 0, "k": 200_000_000 }, "o": { "a": 0, "k": 0 }, "m": 1,
                     "tr": { "ty": "tr", "p": { "a": 0, "k": [1, 0] } } }] }]);
    let mut cyclic = media::lottie_solid("#ffffff");
    cyclic["assets"] = json!([{ "id": "a", "layers": [{ "ty": 0, "refId": "a", "ind": 1, "ip": 0, "op": 10, "st": 0, "w": 100, "h": 100 }] }]);
    cyclic["layers"] = json!([{ "ty": 0, "refId": "a", "ind": 1, "ip": 0, "op": 10, "st": 0, "w": 100, "h": 100, "ks": cyclic["layers"][0]["ks"] }]);
    std::fs::write(d.join("repeated.json"), repeated.to_string()).unwrap();
    std::fs::write(d.join("cyclic.json"), cyclic.to_string()).unwrap();
    gif_bomb(&d.join("bomb.gif"), 2000, 30);
    for (file, said) in [
        ("repeated.json", "a repeater makes 200000000 copies"),
        ("cyclic.json", "precomposition \"a\" contains itself"),
        ("bomb.gif", "an animation of more than 25 frames of 2000×2000 pixels"),
    ] {
        let record = app.upload(&token, None, &d.join(file), "application/octet-stream").await;
        let asset = app.wait_for_asset(&token, record["id"].as_str().unwrap()).await;
        assert_eq!(asset["status"], "failed", "{file}: {asset}");
        assert!(asset["error"].as_str().unwrap().contains(said), "{file}: {asset}");
    }

    another_account_renders(&app, "neighbour").await;
    sign_in_flood_is_turned_away_before_hashing(&app).await;
    // The whole service ran in this test's process: its peak stayed within one render's
    // memory limit (2 GiB) although the bombs asked for far more.
    let peak_kib = peak_rss_kib();
    assert!(peak_kib < 2 << 20, "peak RSS {peak_kib} KiB");
}

/// Two hundred sign-ins at once, each with another address: those beyond the hashing
/// queue are refused at once (429), the rest are checked (401), and the console answers.
async fn sign_in_flood_is_turned_away_before_hashing(app: &TestApp) {
    use super::console::{plain_client, post_sign_in, sign_in_form};
    let client = plain_client();
    let form = sign_in_form(app, &client).await;
    let attempts = (0..200).map(|i| {
        let (client, form) = (&client, &form);
        async move { post_sign_in(app, client, form, &format!("flood{i}@example.com"), "guess", "").await.status() }
    });
    let statuses = futures::future::join_all(attempts).await;
    assert!(statuses.iter().all(|s| matches!(s.as_u16(), 401 | 429)), "{statuses:?}");
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "some were turned away: {statuses:?}");
    assert!(statuses.contains(&StatusCode::UNAUTHORIZED), "some were checked");
    let page = client.get(format!("{}/console/sign-in", app.address)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
}

/// The peak resident memory of this process (where the whole service runs), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap()
}

/// Another account's request is answered within a second, however busy the farm is.
async fn answers_at_once(app: &TestApp, token: &str) {
    let asked = std::time::Instant::now();
    json(app.get("/generator/v1/templates", token).await, 200).await;
    assert!(asked.elapsed() < std::time::Duration::from_secs(1), "answered after {:?}", asked.elapsed());
}

/// 10,000 rectangles, each copied 1,000 times by a repeater: every shape stays under the
/// per-shape caps, and rlottie builds ten million shapes (2.9 GiB in the process that
/// converted it, before the sandbox). Under a MiB of JSON.
fn hostile_lottie() -> Vec<u8> {
    let rectangle = json!({ "ty": "rc", "d": 1, "s": { "a": 0, "k": [2, 2] }, "p": { "a": 0, "k": [50, 50] }, "r": { "a": 0, "k": 0 } });
    let mut shapes = vec![rectangle; 10_000];
    shapes.push(json!({ "ty": "rp", "c": { "a": 0, "k": 1000 }, "o": { "a": 0, "k": 0 }, "m": 1,
                        "tr": { "ty": "tr", "p": { "a": 0, "k": [0.01, 0] } } }));
    shapes.push(json!({ "ty": "fl", "c": { "a": 0, "k": [1, 0, 0, 1] }, "o": { "a": 0, "k": 100 }, "r": 1 }));
    let mut hostile = media::lottie_solid("#ffffff");
    hostile["layers"] = json!([{ "ty": 4, "ind": 1, "ip": 0, "op": 10, "st": 0, "ks": hostile["layers"][0]["ks"],
                                 "shapes": [{ "ty": "gr", "it": shapes }] }]);
    let bytes = hostile.to_string().into_bytes();
    assert!(bytes.len() < 1 << 20, "under a MiB");
    bytes
}

/// The animation of [`hostile_lottie`] uploaded fails in its child, saying why, while
/// another account is answered and renders, and the service's own memory does not grow.
async fn a_lottie_that_builds_gigabytes_fails_alone_in_its_sandbox(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("mallory").await;
    let (neighbour, short) = bystander(&app, "neighbour").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hostile.json");
    std::fs::write(&file, hostile_lottie()).unwrap();

    let before = peak_rss_kib();
    let record = app.upload(&token, None, &file, "application/json").await;
    let id = record["id"].as_str().unwrap();
    answers_at_once(&app, &neighbour).await;
    renders(&app, &neighbour, &short).await;
    let asset = app.wait_for_asset(&token, id).await;
    assert_eq!(asset["status"], "failed", "{asset}");
    let said = asset["error"].as_str().unwrap();
    assert!(said.starts_with("the Lottie animation needs more memory than the "), "{said}");
    assert!(said.ends_with(" MiB reserved for it"), "{said}");
    answers_at_once(&app, &neighbour).await;
    let grew_mib = peak_rss_kib().saturating_sub(before) / 1024;
    assert!(grew_mib < 1024, "the service grew by {grew_mib} MiB");
    app.stop().await;
}

/// The animation of [`hostile_lottie`] as the Lottie layer of a template, from an
/// address: the render fails in its sandbox, saying why, for good (one attempt), and so
/// does a preview frame, while another account is answered, renders and previews; the
/// service's own memory does not grow.
async fn a_render_whose_source_builds_gigabytes_fails_alone_in_its_sandbox(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let files = FileServer::start().await;
    let url = files.file("/hostile.json", "application/json", hostile_lottie());
    let user = app.create_user("mallory", None, 1).await;
    let token = app.token_for(&user).await;
    let (neighbour, short) = bystander(&app, "neighbour").await;
    let mut sticker = document(1.0, 320, 0, 0);
    sticker["clips"][0]["layers"] = json!([{ "id": "sticker", "kind": "lottie", "x": 0, "y": 0, "width": 160,
                                             "height": 160, "source": { "url": url } }]);
    let made = json(save(&app, &token, &sticker).await, 200).await;

    let before = peak_rss_kib();
    let body = json!({ "template_id": made["id"], "options": {}, "values": [{}] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    answers_at_once(&app, &neighbour).await;
    renders(&app, &neighbour, &short).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let video = &done["videos"][0];
    assert_eq!(video["status"], "failed", "{done}");
    let said = video["error"].as_str().unwrap();
    assert!(said.contains("the Lottie animation needs more memory than the "), "{said}");
    assert!(said.ends_with(" MiB reserved for it"), "{said}");
    // Fetched once by the template's own preview and once by the one attempt at the video.
    assert!(files.hits("/hostile.json") <= 2, "fetched {} times", files.hits("/hostile.json"));
    // A preview frame of it fails in its sandbox too, naming why; the neighbour's frame
    // is drawn meanwhile.
    let frame = |id: &str| format!("/generator/v1/templates/{id}/preview");
    let res = app.post_json(&frame(made["id"].as_str().unwrap()), &token, &json!({ "t": 0.5 }), &[]).await;
    let refused = error(res, 400, "error.validation_failed").await;
    assert_eq!(refused["errors"][0]["key"], "error.unrenderable", "{refused}");
    assert!(refused["errors"][0]["message"].as_str().unwrap().contains("needs more memory than the "), "{refused}");
    let theirs = short["template_id"].as_str().unwrap();
    let res = app.post_json(&frame(theirs), &neighbour, &json!({ "t": 0.5 }), &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 1, "refunded");
    answers_at_once(&app, &neighbour).await;
    let grew_mib = peak_rss_kib().saturating_sub(before) / 1024;
    assert!(grew_mib < 1024, "the service grew by {grew_mib} MiB");
    app.stop().await;
}

/// A render that runs out of its time limit fails saying so and keeps its credit: the
/// worker's time was spent, and a refund would let the same job buy it again and again.
async fn a_render_out_of_its_time_keeps_its_credit(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_JOB_TIMEOUT", "1s")]).await;
    let user = app.create_user("slowpoke", None, 5).await;
    let token = app.token_for(&user).await;
    // Thirty seconds of forty full-canvas layers at 1080 × 1080: far more than a second.
    let made = json(save(&app, &token, &document(30.0, 1080, 40, 1080)).await, 200).await;
    let body = |options: Value| json!({ "template_id": made["id"], "options": options, "values": [{}] });
    let quote =
        json(app.post_json("/generator/v1/jobs", &token, &body(json!({ "dry_run": true })), &[]).await, 200).await;
    let price = quote["credits"].as_i64().unwrap();
    let job = json(app.post_json("/generator/v1/jobs", &token, &body(json!({})), &[]).await, 200).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let video = &done["videos"][0];
    assert_eq!(video["status"], "failed", "{done}");
    let said = video["error"].as_str().unwrap();
    assert!(said.starts_with("the render took longer than the limit of 1 s; the credit is kept"), "{said}");
    let credits = json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"].as_i64();
    assert_eq!(credits, Some(5 - price), "not refunded");
    app.stop().await;
}

/// Four requests whose CSV file is a header of two million commas: each is refused at
/// once naming the header, and another account is answered meanwhile.
async fn spreadsheets_of_a_million_columns_are_refused_while_others_are_answered(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("mallory").await;
    let (neighbour, _) = bystander(&app, "neighbour").await;
    let made = json(save(&app, &token, &document(1.0, 64, 1, 64)).await, 200).await;
    let path = format!("/generator/v1/templates/{}/jobs", made["id"].as_str().unwrap());
    let commas = format!("{}\nx\n", ",".repeat(2_000_000));
    let floods = (0..4).map(|_| async {
        let res = app
            .client
            .post(app.url(&path))
            .bearer_auth(&token)
            .header("content-type", "text/csv")
            .body(commas.clone())
            .send()
            .await
            .unwrap();
        error(res, 400, "error.validation_failed").await
    });
    let (refused, ()) = tokio::join!(futures::future::join_all(floods), answers_at_once(&app, &neighbour));
    for body in refused {
        assert_eq!(body["errors"][0]["field"], "header", "{body}");
        assert!(body["errors"][0]["message"].as_str().unwrap().starts_with("has 2000001 columns;"), "{body}");
        assert!(body.to_string().len() < 1000, "{body}");
    }
    app.stop().await;
}
