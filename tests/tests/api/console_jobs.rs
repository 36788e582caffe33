//! The console's templates, jobs and developer portal in a real browser: a video made from
//! a template's render form plays; markup in a value stays text; a callback is
//! redelivered; a spreadsheet shows its rows and renders a video per row; a voice-over is spoken with a voice from the list; the webhook secret
//! rotates; the API reference lists the operations.

use std::time::Duration;

use reelfarm_tests::browser::Browser;
use reelfarm_tests::files::FileServer;
use reelfarm_tests::{both_modes, json, Mode, TestApp};
use serde_json::json;

use super::console::{console_user, keep_screenshot, sign_in};

both_modes!(
    a_video_rendered_from_the_form_plays_and_its_callback_is_redelivered,
    a_voice_over_is_spoken_from_the_form_with_a_listed_voice,
    the_portal_rotates_the_webhook_secret_and_lists_the_api
);

const HEADLINE: &str = "0b7e4c1a-5d2f-4e8a-9c3b-7f6a1d2e3c4b";
const PHOTO: &str = "0b7e4c1a-5d2f-4e8a-9c3b-7f6a1d2e3c4c";
const VOICE: &str = "0b7e4c1a-5d2f-4e8a-9c3b-7f6a1d2e3c4d";

/// A 160×120, 1 s, 10 fps template with a one-line text variable and an image variable.
fn template(dir: &std::path::Path) -> std::path::PathBuf {
    let green = dir.join("green.png");
    reelfarm_tests::media::ffmpeg(&["-f", "lavfi", "-i", "color=c=0x00ff00:s=64x64", "-frames:v", "1"], &green);
    let document = json!({
        "version": 1,
        "name": "Console test",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#000000" },
        "clips": [{
            "id": "only",
            "duration": 1.0,
            "layers": [
                {
                    "id": "photo", "kind": "image", "x": 0, "y": 0, "width": 64, "height": 64,
                    "source": { "file": "green.png" },
                    "variable": { "id": PHOTO, "name": "Photo", "weight": 1 }
                },
                {
                    "id": "headline", "kind": "text", "x": 10, "y": 70, "width": 140, "height": 40,
                    "text": "Default words", "font": { "family": "Liberation Sans", "size": 16, "color": "#ffffff" },
                    "multiline": false, "minimum_length": 1, "maximum_length": 60,
                    "variable": { "id": HEADLINE, "name": "Headline", "weight": 2 }
                }
            ]
        }]
    });
    let file = dir.join("template.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    file
}

async fn a_video_rendered_from_the_form_plays_and_its_callback_is_redelivered(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "rita").await;
    let dir = tempfile::tempdir().unwrap();
    let template = app.import_template(&template(dir.path()), Some(&user), false).await;
    let receiver = FileServer::start().await;
    let hook = receiver.statuses("/hook", &[204]);
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;

    browser.click_to_page("nav a[href='/console/templates']").await;
    assert_eq!(browser.texts(".tile .name").await, ["Console test"]);
    browser.click_to_page(".tile .name").await;
    assert_eq!(browser.text("h1").await, "Console test");
    let legends = browser.texts("fieldset.variable legend").await;
    assert_eq!(legends, ["Photo · image · 64×64 px, covered", "Headline · text · 1–60 characters, one line"]);
    let headline = format!("input[name='text.{HEADLINE}']");
    assert_eq!(browser.attr(&headline, "placeholder").await.as_deref(), Some("Default words"));
    keep_screenshot(&browser, "template").await;

    // Markup the renderer does not take is refused, next to its field; what was typed
    // stays, as text.
    let typed = "<script>document.title='owned'</script>Hi";
    browser.fill(&headline, typed).await;
    browser.click(&format!("input[name='rich.{HEADLINE}']")).await;
    browser.fill("input[name=callback]", &hook).await;
    browser.click_to_page("form.render button[type=submit]").await;
    let problem = browser.text(&format!("#problem-{HEADLINE}")).await;
    assert!(problem.contains("script"), "{problem}");
    assert_eq!(browser.value(&headline).await, typed);
    assert_eq!(browser.value("input[name=callback]").await, hook, "the form keeps what was sent");

    // As plain text it is words: the job is made and its video plays.
    browser.click(&format!("input[name='rich.{HEADLINE}']")).await;
    browser.click_to_page("form.render button[type=submit]").await;
    let path = browser.path_when(|p| p.starts_with("/console/jobs/")).await;
    let job_id = path.trim_start_matches("/console/jobs/").to_string();
    browser.wait_for_texts(".video .status", &["success"], Duration::from_secs(90)).await;
    browser.wait_for_texts("#job-status", &["finished"], Duration::from_secs(5)).await;
    browser.wait_for_playable("video.player", Duration::from_secs(20)).await;
    assert_eq!(browser.client.title().await.unwrap(), format!("Job {job_id} · reelfarm"), "no script ran");
    let values = browser.texts(".values code").await;
    assert!(values[0].contains(r#""<script>document.title='owned'</script>Hi""#), "{values:?}");
    assert_eq!(browser.texts("main script").await.len(), 0, "the value is text, not an element");

    // Its callback, delivered once, then once more on request.
    browser.wait_for_texts("#deliveries .status", &["delivered"], Duration::from_secs(30)).await;
    keep_screenshot(&browser, "job").await;
    browser.click_to_page("#deliveries button").await;
    receiver.wait_for("/hook", 2).await;
    browser.goto(&format!("{}/console/jobs/{job_id}", app.address)).await;
    browser.wait_for_texts("#deliveries .status", &["delivered"], Duration::from_secs(30)).await;
    let attempts = browser.texts("#deliveries ol.attempts li").await;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(attempts.iter().all(|a| a.contains("204")), "{attempts:?}");
    // The finished job's page (its video and deliveries swapped in) and a missing one's.
    browser.assert_accessible().await;
    browser.goto(&format!("{}/console/jobs/00000000-0000-7000-8000-000000000000", app.address)).await;
    assert!(browser.text("main").await.contains("not found"), "{}", browser.text("main").await);

    // The job list, filtered.
    browser.goto(&format!("{}/console/jobs?status=finished&template={}", app.address, template.id)).await;
    assert_eq!(browser.texts("tbody td:first-child").await, std::slice::from_ref(&job_id));
    browser.goto(&format!("{}/console/jobs?status=started", app.address)).await;
    assert!(browser.texts("tbody tr").await.is_empty());

    // The credit is spent, and the account says what it went to.
    browser.goto(&format!("{}/console/account", app.address)).await;
    assert_eq!(browser.text("#credits").await, "6");
    assert!(browser.text("#month-videos").await.starts_with("1 made"), "{}", browser.text("#month-videos").await);

    // A spreadsheet: a bad header is named; a chosen file shows its rows, then renders.
    browser.goto(&format!("{}/console/templates/{}", app.address, template.id)).await;
    browser.fill("textarea[name=csv]", "Headline;Price\nHi;3\n").await;
    browser.click_to_page("[data-csv-preview]").await;
    let problems = browser.texts("#batch-problems li").await;
    assert!(problems[0].starts_with("header: column 2: \"Price\" is no variable"), "{problems:?}");
    let sheet = dir.path().join("rows.csv");
    std::fs::write(&sheet, "\u{feff}headline;title\r\nFirst row;One\r\n;Two\r\n").unwrap();
    browser.choose_files("#csv-file", &[&sheet]).await;
    browser
        .wait_for_texts(
            "#batch-preview caption",
            &["The first 2 of 2 videos, as they will be rendered"],
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(browser.texts("#batch-preview td").await, ["First row", "One", "the template's", "Two"]);
    browser.assert_accessible().await;
    keep_screenshot(&browser, "spreadsheet").await;
    browser.click_to_page("#batch-send").await;
    browser.path_when(|p| p.starts_with("/console/jobs/")).await;
    browser.wait_for_texts(".video .status", &["success", "success"], Duration::from_secs(90)).await;
}

/// A 160×120, 1.5 s template with one sound variable (silence by default).
fn speech_template(dir: &std::path::Path) -> std::path::PathBuf {
    let silence = dir.join("silence.wav");
    reelfarm_tests::media::ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "1.5"], &silence);
    let document = json!({
        "version": 1,
        "name": "Voice-over test",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#202020" },
        "clips": [{
            "id": "only",
            "duration": 1.5,
            "layers": [{
                "id": "voice", "kind": "sound", "start": 0, "end": 1.5, "source": { "file": "silence.wav" },
                "variable": { "id": VOICE, "name": "Voice-over" }
            }]
        }]
    });
    let file = dir.join("template.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    file
}

async fn a_voice_over_is_spoken_from_the_form_with_a_listed_voice(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "vera").await;
    let dir = tempfile::tempdir().unwrap();
    let template = app.import_template(&speech_template(dir.path()), Some(&user), false).await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/templates/{}", app.address, template.id)).await;
    assert_eq!(browser.texts("fieldset.variable legend").await, ["Voice-over · sound · plays 1.5 s"]);

    // A text to speak needs a voice; the voices are the service's list.
    let (text, voice) = (format!("textarea[name='tts.{VOICE}']"), format!("select[name='voice.{VOICE}']"));
    browser.fill(&text, "Hello from the console").await;
    browser.click_to_page("form.render button[type=submit]").await;
    assert_eq!(browser.text(&format!("#problem-{VOICE}")).await, "Choose a voice for the text to speak");
    let script = "return [...document.querySelectorAll(arguments[0] + ' option')].map(o => o.value)";
    let offered = browser.client.execute(script, vec![json!(voice)]).await.unwrap();
    let offered: Vec<String> = serde_json::from_value(offered).unwrap();
    let american = offered.iter().find(|v| v.starts_with("espeak;en-us;")).expect("espeak's en-us voice is offered");
    browser.choose(&voice, american).await;
    browser.click_to_page("form.render button[type=submit]").await;
    browser.path_when(|p| p.starts_with("/console/jobs/")).await;
    browser.wait_for_texts(".video .status", &["success"], Duration::from_secs(90)).await;
    let values = browser.texts(".values code").await;
    let asked: serde_json::Value = serde_json::from_str(&values[0]).unwrap();
    assert_eq!(asked[VOICE], json!({ "type": "tts", "value": "Hello from the console", "identifier": american }));
    browser.wait_for_playable("video.player", Duration::from_secs(20)).await;
}

async fn the_portal_rotates_the_webhook_secret_and_lists_the_api(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "wes").await;
    let token = app.token_for(&user).await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/developer", app.address)).await;

    let secret_of_api = || async {
        json(app.get("/api2/v1/users/me/webhook-secret", &token).await, 200).await["secret"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = secret_of_api().await;
    assert_eq!(
        browser.texts("#webhook-secret").await,
        std::slice::from_ref(&before),
        "the page shows the API's secret"
    );
    browser.click_to_page("form[action='/console/developer/webhook-secret/rotate'] button").await;
    assert!(browser.text("[role=status]").await.starts_with("A new secret signs the callbacks"));
    let after = secret_of_api().await;
    assert_ne!(after, before);
    assert_eq!(browser.texts("#webhook-secret").await, [after]);

    browser.click_to_page("a[href='/console/developer/api']").await;
    assert_eq!(browser.text("h1").await, "API reference");
    let operations = browser.texts(".operation h3").await;
    assert!(operations.contains(&"POST /generator/v1/jobs".to_string()), "{operations:?}");
    let curl = browser.text("#curl-post-generator-v1-jobs").await;
    assert!(curl.starts_with(&format!("curl -X POST '{}/generator/v1/jobs'", app.address)), "{curl}");
    keep_screenshot(&browser, "api").await;
}
