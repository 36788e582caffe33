//! Preview frames: `POST /generator/v1/templates/{id}/preview` answers the
//! frame a render shows at a time, with values applied, drawn by a worker over the bus.

use std::path::Path;

use image::RgbImage;
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(preview_frames_are_the_frames_of_a_render_and_name_bad_fields);

const TITLE: &str = "2b3c4d5e-6f70-4182-9a3b-4c5d6e7f8091";

/// 320×240 at 10 fps, 2 s: a backdrop, a photo from the library and a title that appears
/// at 1 s, so that frames before and after differ.
fn document(photo: &str) -> Value {
    json!({
        "version": 1,
        "name": "Frames",
        "canvas": { "width": 320, "height": 240, "fps": 10 },
        "clips": [{
            "id": "only",
            "duration": 2,
            "layers": [
                { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 320, "height": 240, "color": "#284060" },
                { "id": "photo", "kind": "image", "x": 20, "y": 20, "width": 160, "height": 120, "source": { "asset": photo } },
                {
                    "id": "title", "kind": "text", "x": 10, "y": 160, "width": 300, "height": 70, "start": 1,
                    "text": "<b>Frame</b>", "font": { "family": "Liberation Sans", "size": 40, "color": "#ffee00" },
                    "variable": { "id": TITLE, "name": "Title" }
                }
            ]
        }]
    })
}

/// Peak signal-to-noise ratio of `a` against `b`, in dB.
fn psnr(a: &RgbImage, b: &RgbImage) -> f64 {
    assert_eq!(a.dimensions(), b.dimensions());
    let n = a.as_raw().len() as f64;
    let mse: f64 =
        a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>() / n;
    10.0 * (255.0 * 255.0 / mse.max(1e-9)).log10()
}

/// Frame `n` of the video at `url`, decoded by the ffmpeg CLI.
pub(super) async fn decoded_frame(url: &str, n: u32, dir: &Path) -> RgbImage {
    let video = dir.join("video.mp4");
    std::fs::write(&video, reqwest::get(url).await.unwrap().bytes().await.unwrap()).unwrap();
    let out = dir.join(format!("frame-{n}.png"));
    let select = format!("select=eq(n\\,{n})");
    media::ffmpeg(&["-i", video.to_str().unwrap(), "-vf", &select, "-frames:v", "1"], &out);
    image::open(&out).unwrap().to_rgb8()
}

async fn preview(app: &TestApp, token: &str, id: &str, body: &Value) -> reqwest::Response {
    app.post_json(&format!("/generator/v1/templates/{id}/preview"), token, body, &[]).await
}

async fn frame(app: &TestApp, token: &str, id: &str, body: &Value) -> RgbImage {
    let res = preview(app, token, id, body).await;
    assert_eq!(res.status(), 200, "{body}");
    assert_eq!(res.headers()["content-type"], "image/jpeg");
    image::load_from_memory(&res.bytes().await.unwrap()).unwrap().to_rgb8()
}

async fn preview_frames_are_the_frames_of_a_render_and_name_bad_fields(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("previewer", None, 5).await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let uploaded = app.upload(&token, None, &media::jpeg(dir.path()), "image/jpeg").await;
    let photo = app.wait_for_asset(&token, uploaded["metadata"]["id"].as_str().unwrap()).await;
    let photo = photo["metadata"]["id"].as_str().unwrap().to_string();
    let made = json!({ "json": document(&photo) });
    let made = json(app.post_json("/generator/v1/templates", &token, &made, &[]).await, 200).await;
    let id = made["id"].as_str().unwrap().to_string();

    // Against the frames of a real render of the same template.
    let job = json!({ "template_id": id, "options": {}, "values": [{ "template_variables": {} }] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &job, &[]).await, 200).await;
    let job = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let url = job["videos"][0]["url"].as_str().unwrap().to_string();
    let before = decoded_frame(&url, 5, dir.path()).await;
    let after = decoded_frame(&url, 15, dir.path()).await;
    let at_half = frame(&app, &token, &id, &json!({ "t": 0.5 })).await;
    let at_one_and_half = frame(&app, &token, &id, &json!({ "t": 1.5, "values": [] })).await;
    assert_eq!(at_half.dimensions(), (320, 240));
    let (same_before, same_after) = (psnr(&at_half, &before), psnr(&at_one_and_half, &after));
    let crossed = psnr(&at_half, &after);
    assert!(same_before > 30.0 && same_after > 30.0, "{same_before:.1} dB, {same_after:.1} dB");
    assert!(crossed < same_after - 6.0, "the title's frame differs from the one before it: {crossed:.1} dB");

    // Values apply; quality scales.
    let other = frame(&app, &token, &id, &json!({ "t": 1.5, "values": { TITLE: "Other words" } })).await;
    assert!(psnr(&other, &at_one_and_half) < same_after - 3.0, "the value shows");
    let big = frame(&app, &token, &id, &json!({ "t": 1.5, "quality": "720p" })).await;
    assert_eq!(big.dimensions(), (960, 720));
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 4, "free");

    // Bad fields, each named.
    for (body, field) in [
        (json!({}), "t"),
        (json!({ "t": -1 }), "t"),
        (json!({ "t": "soon" }), "t"),
        (json!({ "t": 2.5 }), "t"),
        (json!({ "t": 1, "quality": "4k" }), "quality"),
        (json!({ "t": 1, "values": "x" }), "values"),
        (
            json!({ "t": 1, "values": { "0b1a2c3d-0000-4000-8000-000000000000": "x" } }),
            "values.0b1a2c3d-0000-4000-8000-000000000000",
        ),
        (json!({ "t": 1, "values": { TITLE: "x".repeat(1001) } }), &format!("values.{TITLE}")),
    ] {
        let problem = error(preview(&app, &token, &id, &body).await, 400, "error.validation_failed").await;
        assert_eq!(problem["errors"][0]["field"], field, "{body}: {problem}");
    }
    let (_, stranger) = app.user_with_token("stranger").await;
    error(preview(&app, &stranger, &id, &json!({ "t": 1 })).await, 404, "error.not_found").await;
    let probe = probe_url(&url, dir.path()).await;
    assert_eq!(probe.width, Some(320));
    app.stop().await;
}
