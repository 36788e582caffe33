//! The studio in a real browser: a template built from scratch on the timeline
//! and in the property panel (layers added with the keyboard alone, a text made a
//! variable, a bar dragged, undo and redo), saved, then rendered and previewed through the
//! JSON API; the frame follows the playhead; a document that breaks a rule shows the
//! problem at its place.

use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::key::Key;
use fantoccini::Locator;
use reelfarm_tests::browser::Browser;
use reelfarm_tests::media;
use reelfarm_tests::{both_modes, json, Mode, TestApp};
use serde_json::{json, Value};

use super::console::{console_user, keep_screenshot, sign_in};
use reelfarm_backends::store::StudioStore;

both_modes!(
    the_studio_scrubs_frames_and_shows_problems_at_their_place,
    a_template_built_from_scratch_renders_by_the_api
);

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

/// Pixels that are the titles' yellow, below the top 30 % of the frame (where the
/// library's test pattern, which has yellow of its own, is placed).
fn yellow(image: &image::RgbImage) -> usize {
    let top = image.height() * 3 / 10;
    image.enumerate_pixels().filter(|(_, y, p)| *y >= top && p[0] > 200 && p[1] > 200 && p[2] < 90).count()
}

fn yellow_in(encoded: &[u8]) -> usize {
    yellow(&image::load_from_memory(encoded).unwrap().to_rgb8())
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

/// Moves the playhead to `t` and waits for its frame; the yellow pixels in it.
async fn frame_at(browser: &Browser, t: &str) -> usize {
    let scrub = "const r = document.querySelector('#playhead'); r.value = arguments[0]; \
                 r.dispatchEvent(new Event('input')); return r.value;";
    // The range snaps the time to a frame: the frame shown is of the snapped time.
    let snapped = browser.client.execute(scrub, vec![json!(t)]).await.unwrap();
    let snapped = snapped.as_str().unwrap();
    assert!((snapped.parse::<f64>().unwrap() - t.parse::<f64>().unwrap()).abs() < 0.05, "{snapped}");
    wait_for_frame(browser, snapped).await;
    let frame = browser.client.find(Locator::Css("#frame")).await.unwrap();
    yellow_in(&frame.screenshot().await.unwrap())
}

/// Waits up to 20 s until `script` (a JavaScript expression) is true (an edit's answer
/// on a loaded 2-core machine took over 10 s once).
async fn wait_until(browser: &Browser, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while browser.client.execute(&format!("return !!({script});"), vec![]).await.unwrap() != json!(true) {
        assert!(Instant::now() < deadline, "still not true: {script}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for the document view to hold `text`.
async fn wait_for_listing(browser: &Browser, text: &str) {
    wait_until(browser, &format!("document.querySelector('.listing').textContent.includes({})", json!(text))).await;
}

/// Sets panel inputs (by element id: checkboxes take `true`/`false`) and sends the panel
/// as a change does.
async fn set_panel(browser: &Browser, fields: &[(&str, &str)]) {
    let script = "for (const [id, value] of arguments[0]) { const e = document.getElementById(id); \
                  if (e.type === 'checkbox') e.checked = value === 'true'; else e.value = value; } \
                  document.querySelector('#properties').dispatchEvent(new Event('change', { bubbles: true }));";
    browser.client.execute(script, vec![json!(fields)]).await.unwrap();
}

/// Presses the keys of `keys` one after the other (characters, or [`Key`]s as strings)
/// while `held` are held down.
async fn press(browser: &Browser, held: &[Key], keys: &str) {
    let mut actions = KeyActions::new("keyboard".into());
    for key in held {
        actions = actions.then(KeyAction::Down { value: char::from(*key) });
    }
    for key in keys.chars() {
        actions = actions.then(KeyAction::Down { value: key }).then(KeyAction::Up { value: key });
    }
    for key in held.iter().rev() {
        actions = actions.then(KeyAction::Up { value: char::from(*key) });
    }
    browser.client.perform_actions(actions).await.unwrap();
}

/// Presses Tab until the focus is on `css` (at most 100 times): it can be reached with
/// the keyboard.
async fn tab_to(browser: &Browser, css: &str) {
    let focused = "return !!document.activeElement && document.activeElement.matches(arguments[0]);";
    for _ in 0..100 {
        if browser.client.execute(focused, vec![json!(css)]).await.unwrap() == json!(true) {
            return;
        }
        press(browser, &[], &Key::Tab).await;
    }
    panic!("Tab never reaches {css}");
}

/// Replaces what the focused field holds with `text`, as a person types it.
async fn retype(browser: &Browser, text: &str) {
    press(browser, &[Key::Control], "a").await;
    press(browser, &[], text).await;
}

/// Drags the element `css` by `dx` pixels with the mouse.
async fn drag(browser: &Browser, css: &str, dx: f64) {
    let element = browser.client.find(Locator::Css(css)).await.unwrap();
    let moves = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement { element, duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::MoveBy { duration: Some(Duration::from_millis(300)), x: dx, y: 0.0 })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    browser.client.perform_actions(moves).await.unwrap();
}

async fn the_studio_scrubs_frames_and_shows_problems_at_their_place(mode: Mode) {
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
    assert_eq!(frame_at(&browser, "0.2").await, 0, "no title before 1 s");
    let shown = frame_at(&browser, "1.5").await;
    assert!(shown > 300, "the title shows at 1.5 s ({shown} yellow pixels)");

    // A document naming an asset the user may not use: the problem at its line, no frame.
    browser.click("#json-view summary").await;
    let set = "document.querySelector('#document').value = arguments[0];";
    let mut stolen = document("Studio test", 10);
    let layer = json!({ "id": "stolen", "kind": "image", "x": 0, "y": 0, "width": 10, "height": 10,
                        "source": { "asset": "someone-elses-asset" } });
    stolen["clips"][0]["layers"].as_array_mut().unwrap().push(layer);
    browser.client.execute(set, vec![Value::String(serde_json::to_string_pretty(&stolen).unwrap())]).await.unwrap();
    browser.click("#apply-json").await;
    wait_until(&browser, "document.querySelector('.listing li.bad')").await;
    let line = browser.text(".listing li.bad").await;
    assert!(line.contains("someone-elses-asset") && line.contains("clips[0].layers[2].source.asset"), "{line}");
    assert_eq!(browser.text("#problem-count").await, "1 problem");
    wait_until(&browser, "!document.querySelector('#frame-problem').hidden").await;
    let status = "fetch(document.querySelector('#frame').src).then((r) => arguments[0](r.status));";
    assert_eq!(browser.client.execute_async(status, vec![]).await.unwrap(), json!(400), "no frame of it");

    // One that breaks a rule: the problem at its line and at its field in the panel (the
    // JSON editor stays open between edits).
    let bad = serde_json::to_string_pretty(&document("Studio test", 120)).unwrap();
    browser.client.execute(set, vec![Value::String(bad)]).await.unwrap();
    browser.click("#apply-json").await;
    wait_until(&browser, "document.querySelector('.listing li.bad') && document.querySelector('.listing li.bad').textContent.includes('fps')").await;
    let line = browser.text(".listing li.bad").await;
    assert!(line.contains("\"fps\": 120") && line.contains("canvas.fps"), "{line}");
    let field = browser.text(".field.invalid").await;
    assert!(field.contains("Frames per second") && field.contains("1 to 60"), "{field}");

    // Undo steps back through both; redo forward; the good document frames again.
    let bad_line = |needle: &str| {
        format!("[...document.querySelectorAll('.listing li.bad')].some((l) => l.textContent.includes('{needle}'))")
    };
    browser.click("#undo").await;
    wait_until(&browser, &bad_line("someone-elses-asset")).await;
    browser.click("#undo").await;
    wait_until(&browser, "!document.querySelector('.listing li.bad')").await;
    browser.click("#redo").await;
    wait_until(&browser, &bad_line("someone-elses-asset")).await;
    browser.click("#undo").await;
    wait_until(&browser, "!document.querySelector('.listing li.bad')").await;
    let shown = frame_at(&browser, "1.2").await;
    assert!(shown > 300, "frames again after the undo ({shown} yellow pixels)");

    // The working copy outlives the page: a reload shows the unsaved rename.
    set_panel(&browser, &[("f-name", "Studio renamed")]).await;
    wait_for_listing(&browser, "\"name\": \"Studio renamed\"").await;
    browser.goto(&format!("{}/console/templates/{id}/studio", app.address)).await;
    assert!(browser.text("#status").await.contains("unsaved changes"));
    assert_eq!(browser.value("#f-name").await, "Studio renamed");

    // An edit made to an older revision (another tab's) is refused, not merged.
    let stale = "const csrf = JSON.parse(document.body.getAttribute('hx-headers'))['x-csrf-token']; \
                 fetch(document.querySelector('#studio').dataset.edit, { method: 'POST', headers: { 'x-csrf-token': csrf }, \
                   body: new URLSearchParams({ op: 'template', name: 'From another tab', rev: '1' }) }) \
                 .then((r) => r.text()).then(arguments[0]);";
    let answer = browser.client.execute_async(stale, vec![]).await.unwrap();
    assert!(answer.as_str().unwrap().contains("changed elsewhere"), "{answer}");
    let copy = app
        .service
        .backends
        .store()
        .studio_session(&reelfarm_domain::id::TemplateId::trusted(id.clone()), &user.id)
        .await
        .unwrap()
        .unwrap();
    assert!(copy.json.contains("Studio renamed") && !copy.json.contains("another tab"), "{}", copy.json);

    // Saving makes version 2, which the API reads back.
    browser.click("#save").await;
    browser.wait_for_texts("#notice", &["Saved version 2."], Duration::from_secs(10)).await;
    let saved = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
    assert_eq!((saved["version"].as_i64(), saved["name"].as_str()), (Some(2), Some("Studio renamed")));

    // Restoring version 1 saves it again as version 3, and the studio edits that.
    browser.client.execute("window.confirm = () => true;", vec![]).await.unwrap();
    browser.click(".versions summary").await;
    browser.click("#restore-1").await;
    browser.wait_for_texts("#notice", &["Restored version 1 as version 3."], Duration::from_secs(10)).await;
    assert_eq!(browser.value("#f-name").await, "Studio test");
    let restored = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
    assert_eq!((restored["version"].as_i64(), restored["name"].as_str()), (Some(3), Some("Studio test")));
    app.stop().await;
}

async fn a_template_built_from_scratch_renders_by_the_api(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "nina").await;
    let token = app.token_for(&user).await;
    let dir = tempfile::tempdir().unwrap();
    let uploaded = app.upload(&token, None, &media::jpeg(dir.path()), "image/jpeg").await;
    let photo = app.wait_for_asset(&token, uploaded["metadata"]["id"].as_str().unwrap()).await;
    let photo = photo["metadata"]["id"].as_str().unwrap().to_string();

    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/templates", app.address)).await;
    browser.click_to_page("#new-template").await;
    let path = browser.path_when(|p| p.ends_with("/studio")).await;
    let id = path.trim_start_matches("/console/templates/").trim_end_matches("/studio").to_string();
    wait_for_frame(&browser, "0").await;

    // A text layer, with the keyboard alone: select the clip on the timeline, add a layer,
    // write a word and move it down. The two changes follow each other faster than the
    // first is answered: both are made, in order, and the focus stays where Tab took it.
    tab_to(&browser, ".clip[data-clip='scene-1']").await;
    press(&browser, &[], &Key::Enter).await;
    browser.wait_for_texts("#panel-title", &["Clip scene-1"], Duration::from_secs(10)).await;
    tab_to(&browser, "#add-layer-kind").await;
    press(&browser, &[], "text").await;
    tab_to(&browser, "#add-layer-button").await;
    press(&browser, &[], &Key::Enter).await;
    browser.wait_for_texts("#panel-title", &["Layer text-1 (text)"], Duration::from_secs(10)).await;
    tab_to(&browser, "#f-text").await;
    retype(&browser, &("HELLO".to_string() + &Key::Tab)).await;
    tab_to(&browser, "#f-y").await;
    retype(&browser, &("430".to_string() + &Key::Tab)).await;
    wait_for_listing(&browser, "\"text\": \"HELLO\"").await;
    wait_for_listing(&browser, "\"y\": 430").await;
    assert_eq!(browser.client.execute("return document.activeElement.id;", vec![]).await.unwrap(), "f-width");
    set_panel(&browser, &[("f-font-color", "#ffee00")]).await;
    wait_for_listing(&browser, "\"color\": \"#ffee00\"").await;
    browser.assert_accessible().await;

    // Make it a variable of a fixed size, one line of at most 20 characters.
    set_panel(&browser, &[("f-variable", "true")]).await;
    wait_until(&browser, "document.querySelector('#f-variable-name')").await;
    set_panel(
        &browser,
        &[("f-variable-name", "Headline"), ("f-fit", "fixed"), ("f-multiline", "false"), ("f-maximum_length", "20")],
    )
    .await;
    let requirements = r#"{"multiline":false,"minimum_length":0,"maximum_length":20}"#;
    browser.wait_for_texts("#requirements", &[requirements], Duration::from_secs(10)).await;

    // Drag its start grip a tenth of the 5 s video to the right: it starts at about 0.5 s.
    let width =
        browser.client.execute("return document.querySelector('#ruler').getBoundingClientRect().width;", vec![]);
    let width = width.await.unwrap().as_f64().unwrap();
    drag(&browser, ".bar[data-layer='text-1'] .grip.start", width / 10.0).await;
    wait_until(&browser, "Number(document.querySelector(\".bar[data-layer='text-1']\").dataset.start) > 0.3").await;

    // An image layer from the library, in the top-left corner.
    browser.choose("#add-layer-kind", "image").await;
    browser.click("#add-layer-button").await;
    browser.wait_for_texts("#panel-title", &["Layer image-1 (image)"], Duration::from_secs(10)).await;
    assert_eq!(browser.value("#f-source").await, format!("asset:{photo}"));
    set_panel(&browser, &[("f-x", "0"), ("f-y", "0"), ("f-width", "200"), ("f-height", "150")]).await;
    wait_for_listing(&browser, "\"width\": 200").await;

    // Undo and redo the last change with Ctrl+Z and Ctrl+Shift+Z.
    tab_to(&browser, "#save").await;
    press(&browser, &[Key::Control], "z").await;
    wait_until(&browser, "!document.querySelector('.listing').textContent.includes('\"width\": 200')").await;
    press(&browser, &[Key::Control, Key::Shift], "z").await;
    wait_for_listing(&browser, "\"width\": 200").await;
    assert_eq!(frame_at(&browser, "0.2").await, 0, "the word is not there before its start");
    let shown = frame_at(&browser, "1").await;
    assert!(shown > 300, "the word shows at 1 s ({shown} yellow pixels)");
    // The screenshot of the docs shows the timeline and the panel too.
    browser.client.set_window_size(1280, 1250).await.unwrap();
    browser.client.execute("document.activeElement.blur(); window.scrollTo(0, 0);", vec![]).await.unwrap();
    keep_screenshot(&browser, "studio").await;

    tab_to(&browser, "#save").await;
    press(&browser, &[], &Key::Enter).await;
    browser.wait_for_texts("#notice", &["Saved version 2."], Duration::from_secs(10)).await;

    // The API reads back what the studio set.
    let template = json(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 200).await;
    let variables = template["variables"].as_array().unwrap();
    assert_eq!(variables.len(), 1, "{template}");
    let variable = &variables[0];
    assert_eq!((variable["name"].as_str(), variable["type"].as_str()), (Some("Headline"), Some("text")));
    assert_eq!(variable["requirements"], serde_json::from_str::<Value>(requirements).unwrap());
    let layers = &template["json"]["clips"][0]["layers"];
    let start = layers[2]["start"].as_f64().unwrap();
    assert!((start - 0.5).abs() < 0.15, "the dragged start: {start}");
    assert_eq!(layers[3]["source"], json!({ "asset": photo }));

    // A preview frame at 1 s shows the word; a render with a value shows the value.
    let body = json!({ "t": 1, "quality": "480p" });
    let res = app.post_json(&format!("/generator/v1/templates/{id}/preview"), &token, &body, &[]).await;
    assert_eq!(res.status(), 200);
    let shown = yellow_in(&res.bytes().await.unwrap());
    assert!(shown > 300, "the preview at 1 s shows the word ({shown} yellow pixels)");
    let variable_id = variable["id"].as_str().unwrap();
    let job = json!({ "template_id": id, "options": { "quality": "480p" },
                      "values": [{ "template_variables": { variable_id: "WORLD" } }] });
    let job = json(app.post_json("/generator/v1/jobs", &token, &job, &[]).await, 200).await;
    let job = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    assert_eq!(job["videos"][0]["status"], "success", "{job}");
    let frame = super::previews::decoded_frame(job["videos"][0]["url"].as_str().unwrap(), 30, dir.path()).await;
    assert!(yellow(&frame) > 300, "the rendered value shows at 1 s");
    app.stop().await;
}
