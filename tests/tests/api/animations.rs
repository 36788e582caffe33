//! Animations in libraries and templates, in both modes: Lottie JSON and
//! dotLottie uploads become `lottie` assets with their size, duration and a thumbnail; a
//! template's Lottie layer plays one from a library; an asset of another kind is refused
//! for it, and a broken file ends failed saying why. Animated GIF pictures get a duration
//! and play as video values, from a library or an address.

use std::path::Path;

use reelfarm_tests::files::FileServer;
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    lottie_uploads_become_assets_that_templates_play,
    broken_lottie_uploads_end_failed_saying_why,
    animated_gifs_play_as_video_values,
);

/// Uploads `file` and waits for its conversion to end.
async fn uploaded(app: &TestApp, token: &str, file: &Path) -> Value {
    let record = app.upload(token, None, file, "application/octet-stream").await;
    app.wait_for_asset(token, record["id"].as_str().unwrap()).await
}

/// 320×240 at 10 fps, 1 s, black, with a Lottie layer showing `source` in a 120×120 box
/// at (100, 60).
fn document(source: &str) -> Value {
    json!({
        "version": 1,
        "name": "Sticker",
        "canvas": { "width": 320, "height": 240, "fps": 10, "background": "#000000" },
        "clips": [{
            "id": "only",
            "duration": 1,
            "layers": [{ "id": "sticker", "kind": "lottie", "x": 100, "y": 60, "width": 120, "height": 120,
                         "source": { "asset": source } }]
        }]
    })
}

async fn lottie_uploads_become_assets_that_templates_play(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("animator", None, 10).await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let types = library["supported_object_types"].as_array().unwrap();
    assert!(types.contains(&json!("lottie")), "{types:?}");

    // Lottie JSON: its size and duration, a thumbnail of its middle frame.
    let file = d.join("green.json");
    std::fs::write(&file, media::lottie_solid("#00c000").to_string()).unwrap();
    let green = uploaded(&app, &token, &file).await;
    assert_eq!((green["status"].as_str(), green["type"].as_str()), (Some("finished"), Some("lottie")), "{green}");
    assert_eq!(green["metadata"]["duration"], "1.000");
    let files = green["assets"].as_array().unwrap();
    assert_eq!(files.len(), 1, "the animation itself: {files:?}");
    assert_eq!(files[0]["image"], json!({ "width": 100, "height": 100, "format": "json" }));
    let served = reqwest::get(files[0]["path"].as_str().unwrap()).await.unwrap();
    assert_eq!(served.headers()["content-type"], "application/json");
    assert_eq!(served.headers()["content-disposition"], "attachment", "never shown as a page");
    assert_eq!(served.json::<Value>().await.unwrap(), media::lottie_solid("#00c000"), "stored as uploaded");
    let thumb = probe_url(green["metadata"]["thumb"].as_str().unwrap(), d).await;
    assert_eq!((thumb.width, thumb.height), (Some(320), Some(320)));

    // dotLottie: the same, from the archive.
    let archive = media::dotlottie(d, "blue.lottie", &media::lottie_solid("#0000d0"));
    let blue = uploaded(&app, &token, &archive).await;
    assert_eq!((blue["status"].as_str(), blue["type"].as_str()), (Some("finished"), Some("lottie")), "{blue}");
    assert_eq!(blue["assets"][0]["image"]["format"], "lottie");

    // A template plays each from the library, in its box.
    for (asset, colour) in [(&green, [0, 192, 0]), (&blue, [0, 0, 208])] {
        let id = asset["metadata"]["id"].as_str().unwrap();
        let made = app.post_json("/generator/v1/templates", &token, &json!({ "json": document(id) }), &[]).await;
        let made = json(made, 200).await;
        let body = json!({ "template_id": made["id"], "options": {}, "values": [{ "template_variables": {} }] });
        let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
        let job = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
        assert_eq!(job["videos"][0]["status"], "success", "{job}");
        let frame = frame_at(job["videos"][0]["url"].as_str().unwrap(), 0.5, d).await;
        assert!(near(frame.get_pixel(160, 120).0, colour), "inside the box: {:?}", frame.get_pixel(160, 120));
        for (x, y) in [(90, 120), (230, 120), (160, 50), (160, 190)] {
            assert!(near(frame.get_pixel(x, y).0, [0, 0, 0]), "outside at ({x}, {y}): {:?}", frame.get_pixel(x, y));
        }
    }

    // A picture is no animation: refused at the layer's source.
    let photo = uploaded(&app, &token, &media::png_with_alpha(d)).await;
    let photo_id = photo["metadata"]["id"].as_str().unwrap();
    let refused = app.post_json("/generator/v1/templates", &token, &json!({ "json": document(photo_id) }), &[]).await;
    let refused = json(refused, 400).await;
    let error = &refused["errors"][0];
    assert_eq!(error["field"], "json.clips[0].layers[0].source.asset", "{refused}");
    assert!(
        error["message"].as_str().unwrap().contains("is a sprite asset; a lottie layer takes a lottie"),
        "{refused}"
    );
    app.stop().await;
}

/// The frame at `seconds` of the video at `url`, as RGB.
async fn frame_at(url: &str, seconds: f64, dir: &Path) -> image::RgbImage {
    let video = dir.join("video.mp4");
    std::fs::write(&video, reqwest::get(url).await.unwrap().bytes().await.unwrap()).unwrap();
    let png = dir.join("frame.png");
    media::ffmpeg(&["-ss", &seconds.to_string(), "-i", video.to_str().unwrap(), "-frames:v", "1"], &png);
    image::open(&png).unwrap().to_rgb8()
}

/// Whether each channel of `pixel` is within 24 of `expected`'s.
fn near([r, g, b]: [u8; 3], [er, eg, eb]: [u8; 3]) -> bool {
    r.abs_diff(er) <= 24 && g.abs_diff(eg) <= 24 && b.abs_diff(eb) <= 24
}

async fn broken_lottie_uploads_end_failed_saying_why(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("breaker").await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut layerless = media::lottie_solid("#ffffff");
    layerless.as_object_mut().unwrap().remove("layers");
    let no_layers = d.join("no-layers.json");
    std::fs::write(&no_layers, layerless.to_string()).unwrap();
    let not_an_archive = d.join("broken.lottie");
    std::fs::write(&not_an_archive, b"PK\x03\x04 and then nothing of a ZIP archive").unwrap();
    for (file, said) in [(no_layers, "the field \"layers\" is missing"), (not_an_archive, "not a readable dotLottie")] {
        let asset = uploaded(&app, &token, &file).await;
        assert_eq!(asset["status"], "failed", "{asset}");
        let error = asset["error"].as_str().unwrap_or_default();
        assert!(error.contains("not a usable Lottie animation") && error.contains(said), "{asset}");
    }
    app.stop().await;
}

const CLIP: &str = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901";

async fn animated_gifs_play_as_video_values(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("gifmaker", None, 10).await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 1 s: red for 0.5 s, then blue.
    let gif = d.join("red-blue.gif");
    let graph = "color=c=red:s=40x40:r=10:d=0.5[a];color=c=blue:s=40x40:r=10:d=0.5[b];[a][b]concat=n=2";
    media::ffmpeg(&["-f", "lavfi", "-i", graph], &gif);

    // In a library: a picture that plays for a second.
    let asset = uploaded(&app, &token, &gif).await;
    assert_eq!((asset["type"].as_str(), asset["metadata"]["duration"].as_str()), (Some("sprite"), Some("1.000")));
    let asset_id = asset["metadata"]["id"].as_str().unwrap();

    // The default of a video variable, held on its last frame after a second.
    let document = json!({
        "version": 1, "name": "Looping", "canvas": { "width": 160, "height": 80, "fps": 10 },
        "clips": [{ "id": "only", "duration": 2, "layers": [{
            "id": "clip", "kind": "video", "x": 0, "y": 0, "width": 160, "height": 80, "source": { "asset": asset_id },
            "variable": { "id": CLIP, "name": "Clip" } }] }]
    });
    let made =
        json(app.post_json("/generator/v1/templates", &token, &json!({ "json": document }), &[]).await, 200).await;
    let files = FileServer::start().await;
    let address = files.file("/red-blue.gif", "image/gif", std::fs::read(&gif).unwrap());
    for value in [json!({}), json!({ CLIP: address })] {
        let body = json!({ "template_id": made["id"], "options": {}, "values": [{ "template_variables": value }] });
        let job = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
        let job = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
        assert_eq!(job["videos"][0]["status"], "success", "{job}");
        let url = job["videos"][0]["url"].as_str().unwrap();
        for (t, red) in [(0.25, true), (0.75, false), (1.75, false)] {
            let [r, g, b] = frame_at(url, t, d).await.get_pixel(80, 40).0;
            let shown = if red { r > 180 && g < 70 && b < 70 } else { b > 160 && r < 70 && g < 70 };
            assert!(shown, "{value} at {t} s: {:?}, {}", [r, g, b], if red { "red" } else { "blue" });
        }
    }
    assert_eq!(files.hits("/red-blue.gif"), 1);
    app.stop().await;
}
