//! The studio in a real browser (issue #20): the frame follows the playhead, a save that
//! breaks a rule names its field, a good save is the next version.

use std::time::{Duration, Instant};

use reelfarm_tests::browser::Browser;
use reelfarm_tests::{both_modes, json, Mode, TestApp};
use serde_json::{json, Value};

use super::console::{console_user, keep_screenshot, sign_in};

both_modes!(the_studio_scrubs_frames_and_saves_versions, a_template_made_from_scratch_opens_in_the_studio);

/// 320×240 at 10 fps, 2 s: a dark backdrop and a yellow title from 1 s on.
fn document(name: &str, fps: u32) -> Value {
    json!({
        "version": 1,
        "name": name,
        "canvas": { "width": 320, "height": 240, "fps": fps },
        "clips": [{
            "id": "only",
            "duration": 2,
            "layers": [
                { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 320, "height": 240, "color": "#102030" },
                { "id": "title", "kind": "text", "x": 20, "y": 80, "width": 280, "height": 80, "start": 1,
                  "text": "<b>STUDIO</b>", "font": { "family": "Liberation Sans", "size": 56, "color": "#ffee00" } }
            ]
        }]
    })
}

/// Pixels of a PNG that are the title's yellow.
fn yellow_pixels(png: &[u8]) -> usize {
    let image = image::load_from_memory(png).unwrap().to_rgb8();
    image.pixels().filter(|p| p[0] > 200 && p[1] > 200 && p[2] < 90).count()
}

/// Waits until the studio's frame shows time `t` (loaded).
async fn wait_for_frame(browser: &Browser, t: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let shown = browser.attr("#frame", "data-t").await;
        let loaded = browser.client.execute("return document.querySelector('#frame').complete;", vec![]).await.unwrap();
        if shown.as_deref() == Some(t) && loaded == Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "the frame still shows {shown:?}, not {t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn the_studio_scrubs_frames_and_saves_versions(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "sam").await;
    let token = app.token_for(&user).await;
    let made = json!({ "json": document("Studio test", 10) });
    let made = json(app.post_json("/generator/v1/templates", &token, &made, &[]).await, 200).await;
    let id = made["id"].as_str().unwrap().to_string();
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/templates/{id}", app.address)).await;
    browser.click_to_page("#open-studio").await;
    browser.wait_for_path(&format!("/console/templates/{id}/studio")).await;

    // The frame at the playhead: no title at 0 s, the title at 1.5 s.
    wait_for_frame(&browser, "0").await;
    let frame = browser.client.find(fantoccini::Locator::Css("#frame")).await.unwrap();
    assert_eq!(yellow_pixels(&frame.screenshot().await.unwrap()), 0, "no title at 0 s");
    let scrub = "const r = document.querySelector('#playhead'); r.value = '1.5'; r.dispatchEvent(new Event('input'));";
    browser.client.execute(scrub, vec![]).await.unwrap();
    wait_for_frame(&browser, "1.5").await;
    let yellow = yellow_pixels(&frame.screenshot().await.unwrap());
    assert!(yellow > 300, "the title shows at 1.5 s ({yellow} yellow pixels)");
    keep_screenshot(&browser, "studio").await;

    // A document that breaks a rule is not saved, and the problem names its field.
    let set = "document.querySelector('#document').value = arguments[0];";
    let bad = serde_json::to_string_pretty(&document("Studio test", 120)).unwrap();
    browser.client.execute(set, vec![Value::String(bad)]).await.unwrap();
    browser.click_to_page("#save").await;
    let problems = browser.texts("#problems li").await;
    assert!(problems.iter().any(|p| p.contains("json.canvas.fps")), "{problems:?}");

    // A good one is version 2, and the API reads it back.
    let good = serde_json::to_string_pretty(&document("Studio renamed", 10)).unwrap();
    browser.client.execute(set, vec![Value::String(good)]).await.unwrap();
    browser.click_to_page("#save").await;
    browser.wait_for_texts("#saved", &["Saved version 2."], Duration::from_secs(10)).await;
    let saved = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
    assert_eq!((saved["version"].as_i64(), saved["name"].as_str()), (Some(2), Some("Studio renamed")));
    app.stop().await;
}

async fn a_template_made_from_scratch_opens_in_the_studio(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "nina").await;
    let token = app.token_for(&user).await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/templates", app.address)).await;
    browser.click_to_page("#new-template").await;
    let path = browser.path_when(|p| p.ends_with("/studio")).await;
    wait_for_frame(&browser, "0").await;
    let listed = json(app.get("/generator/v1/templates", &token).await, 200).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let template = &listed[0];
    assert_eq!((template["name"].as_str(), template["version"].as_i64()), (Some("Untitled"), Some(1)));
    assert_eq!(path, format!("/console/templates/{}/studio", template["id"].as_str().unwrap()));
    assert_eq!(template["owner"], user.id.as_str());
    app.stop().await;
}
