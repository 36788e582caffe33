//! The console: signing in with a real browser, and the session, CSRF and
//! header rules over plain HTTP.

use reelfarm_backends::store::{AssetStore, LibraryStore, UserStore};
use reelfarm_domain::account::User;
use reelfarm_domain::password;
use reelfarm_tests::browser::Browser;
use reelfarm_tests::media;
use reelfarm_tests::{both_modes, Mode, TestApp};
use reqwest::header::{HeaderMap, CONTENT_SECURITY_POLICY, COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;

both_modes!(
    a_browser_signs_in_sees_the_libraries_and_signs_out,
    a_browser_uploads_several_files_and_follows_their_conversion,
    a_token_made_in_the_portal_calls_the_api_until_revoked,
    sessions_refuse_forgery_fixation_and_guessing
);

pub(crate) const PASSWORD: &str = "a long enough password";

/// A user who can sign in to the console as `{name}@example.com`.
pub(crate) async fn console_user(app: &TestApp, name: &str) -> (User, String) {
    let user = app.create_user(name, None, 7).await;
    let email = format!("{name}@example.com");
    let hash = password::hash(PASSWORD).unwrap();
    app.service.backends.store().set_sign_in(&user.id, &email, &hash).await.unwrap();
    (user, email)
}

async fn a_browser_signs_in_sees_the_libraries_and_signs_out(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, email) = console_user(&app, "ada").await;
    let browser = Browser::start().await;

    browser.goto(&format!("{}/", app.address)).await;
    browser.wait_for_path("/console/sign-in").await;
    browser.fill("input[name=email]", &email).await;
    browser.fill("input[name=password]", "not the password").await;
    browser.click_to_page("button[type=submit]").await;
    assert_eq!(browser.text("[role=alert]").await, "The e-mail address or the password is wrong");

    browser.fill("input[name=password]", PASSWORD).await;
    browser.click_to_page("button[type=submit]").await;
    browser.wait_for_path("/console/libraries").await;
    assert_eq!(browser.text("h1").await, "Libraries");
    assert_eq!(browser.text(".card strong").await, "My library");
    keep_screenshot(&browser, "libraries").await;

    browser.click_to_page(".card").await;
    assert_eq!(browser.text("h1").await, "My library");
    assert_eq!(browser.text("#empty").await, "This library is empty.");

    browser.goto(&format!("{}/console/account", app.address)).await;
    assert!(browser.text("tbody td").await.ends_with("(this one)"));
    assert_eq!(browser.text("main p strong").await, "ada");

    browser.click_to_page("header form button").await;
    browser.wait_for_path("/console/sign-in").await;
    browser.goto(&format!("{}/console/account", app.address)).await;
    browser.wait_for_path("/console/sign-in?next=%2Fconsole%2Faccount").await;
}

/// Signs `email` in with `browser`; the libraries page is shown.
pub(crate) async fn sign_in(app: &TestApp, browser: &Browser, email: &str) {
    browser.goto(&format!("{}/console/sign-in", app.address)).await;
    browser.fill("input[name=email]", email).await;
    browser.fill("input[name=password]", PASSWORD).await;
    browser.click_to_page("button[type=submit]").await;
    browser.wait_for_path("/console/libraries").await;
}

async fn a_browser_uploads_several_files_and_follows_their_conversion(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (user, email) = console_user(&app, "lin").await;
    let dir = tempfile::tempdir().unwrap();
    let (png, mp4) = (media::png_with_alpha(dir.path()), media::mp4_with_audio(dir.path()));
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.click_to_page(".card").await;
    assert_eq!(browser.text("#empty").await, "This library is empty.");

    browser.choose_files("#files", &[&png, &mp4]).await;
    let limit = std::time::Duration::from_secs(90);
    browser.wait_for_texts(".tile .status", &["finished", "finished"], limit).await;
    let mut kinds = browser.texts(".tile .meta span:nth-child(2)").await;
    kinds.sort_unstable();
    assert_eq!(kinds, ["finished · sprite", "finished · video"]);
    assert_eq!(browser.texts(".tile img").await.len(), 2, "both have a thumbnail");
    browser.wait_for_images(".tile img").await;
    keep_screenshot(&browser, "library").await;

    // What the browser sent is what is stored.
    let store = app.service.backends.store();
    let library = store.personal_library(&user.id).await.unwrap();
    let mut sizes: Vec<Option<u64>> =
        store.library_assets(&library.id, 10, 0).await.unwrap().iter().map(|a| a.size).collect();
    sizes.sort_unstable();
    let mut sent = vec![Some(std::fs::metadata(&png).unwrap().len()), Some(std::fs::metadata(&mp4).unwrap().len())];
    sent.sort_unstable();
    assert_eq!(sizes, sent);

    // The picture's page: its files shown, renamed, found by its new name, deleted.
    let picture = format!(
        "a.name[href$='{}']",
        store
            .library_assets(&library.id, 10, 0)
            .await
            .unwrap()
            .iter()
            .find(|a| a.filename.ends_with(".png"))
            .unwrap()
            .id
    );
    browser.click_to_page(&picture).await;
    assert_eq!(browser.text("h1").await, "alpha");
    let roles = browser.texts(".rendition strong").await;
    assert!(roles.contains(&"original".to_string()) && roles.contains(&"thumb".to_string()), "{roles:?}");
    browser.wait_for_images(".rendition img").await;
    browser.fill("input[name=label]", "  ").await;
    browser.click_to_page("form[action$='/rename'] button").await;
    assert_eq!(browser.text("[role=alert]").await, "The name is required and must not be empty");
    browser.fill("input[name=label]", "Beach <b>day</b>").await;
    browser.click_to_page("form[action$='/rename'] button").await;
    assert_eq!(browser.text("h1").await, "Beach <b>day</b>");
    browser.click_to_page("main p a[href^='/console/libraries/']").await;
    browser.fill("input[name=q]", "BEACH").await;
    browser.click_to_page("form[role=search] button").await;
    browser.wait_for_texts(".tile .name", &["Beach <b>day</b>"], std::time::Duration::from_secs(10)).await;
    browser.click_to_page(".tile .name").await;
    browser.click_to_page("form[action$='/delete'] button").await;
    browser.wait_for_path(&format!("/console/libraries/{}", library.id)).await;
    assert_eq!(browser.texts(".tile").await.len(), 1);
    assert_eq!(store.library_assets(&library.id, 10, 0).await.unwrap().len(), 1);
}

async fn a_token_made_in_the_portal_calls_the_api_until_revoked(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, email) = console_user(&app, "tom").await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.goto(&format!("{}/console/developer", app.address)).await;
    assert_eq!(browser.client.title().await.unwrap(), "Developer · reelfarm");
    assert_eq!(browser.text("main p.muted + h2 + form + h2 + p").await, "No tokens yet.");

    // A name is required: the server says so (blanks pass the browser's own check).
    browser.fill("input[name=name]", "  ").await;
    browser.click_to_page("form[action='/console/developer/tokens'] button").await;
    assert_eq!(browser.text("[role=alert]").await, "name: is required and must not be empty");

    browser.fill("input[name=name]", "CI <deploys>").await;
    browser.click_to_page("form[action='/console/developer/tokens'] button").await;
    let token = browser.text("#new-token").await;
    assert!(token.starts_with("rf_"), "{token}");
    assert_eq!(browser.texts("tbody td:first-child").await, ["CI <deploys>"], "escaped, shown as text");
    keep_screenshot(&browser, "developer").await;

    let me = app.get("/user/v1/users", &token).await;
    assert_eq!(me.status(), StatusCode::OK);
    browser.goto(&format!("{}/console/developer", app.address)).await;
    assert!(browser.text("tbody td:nth-child(4)").await.starts_with("20"), "its last use is shown");
    assert!(browser.texts("#new-token").await.is_empty(), "the secret is shown once");

    browser.click_to_page("tbody button.danger").await;
    browser.wait_for_path("/console/developer").await;
    assert_eq!(browser.texts("tbody .status").await, ["revoked"]);
    assert_eq!(app.get("/user/v1/users", &token).await.status(), StatusCode::UNAUTHORIZED);
}

/// With `REELFARM_SCREENSHOTS=DIR`, keeps a PNG of the page as `DIR/NAME.png` (how
/// `docs/console/` is made).
pub(crate) async fn keep_screenshot(browser: &Browser, name: &str) {
    let png = browser.screenshot().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    if let Ok(dir) = std::env::var("REELFARM_SCREENSHOTS") {
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }
}

/// A client that keeps redirects and cookies to itself.
pub(super) fn plain_client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// The value of cookie `name` set by a response.
fn set_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        let (pair, _) = v.split_once(';').unwrap_or((v, ""));
        let (n, value) = pair.split_once('=')?;
        (n == name).then(|| value.to_string())
    })
}

/// The value of the first hidden `csrf` field of a page.
fn csrf_field(page: &str) -> String {
    let start = page.find(r#"name="csrf" value=""#).expect("a csrf field") + r#"name="csrf" value=""#.len();
    page[start..].split('"').next().unwrap().to_string()
}

pub(super) struct SignInForm {
    cookie: String,
    csrf: String,
}

pub(super) async fn sign_in_form(app: &TestApp, client: &reqwest::Client) -> SignInForm {
    let res = client.get(format!("{}/console/sign-in", app.address)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = set_cookie(res.headers(), "reelfarm_sign_in").expect("the form's cookie");
    SignInForm { cookie, csrf: csrf_field(&res.text().await.unwrap()) }
}

/// Posts the sign-in form with extra cookies; the response.
pub(super) async fn post_sign_in(
    app: &TestApp,
    client: &reqwest::Client,
    form: &SignInForm,
    email: &str,
    password: &str,
    extra_cookie: &str,
) -> reqwest::Response {
    client
        .post(format!("{}/console/sign-in", app.address))
        .header(COOKIE, format!("reelfarm_sign_in={}; {extra_cookie}", form.cookie))
        .form(&[("email", email), ("password", password), ("csrf", &form.csrf), ("next", "//elsewhere.example/")])
        .send()
        .await
        .unwrap()
}

/// Signs in; the session cookie's value.
pub(super) async fn session(app: &TestApp, client: &reqwest::Client, email: &str) -> String {
    let form = sign_in_form(app, client).await;
    let res = post_sign_in(app, client, &form, email, PASSWORD, "").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    set_cookie(res.headers(), "reelfarm_session").expect("a session cookie")
}

async fn get_page(app: &TestApp, client: &reqwest::Client, path: &str, session: &str) -> reqwest::Response {
    let cookie = format!("reelfarm_session={session}");
    client.get(format!("{}{path}", app.address)).header(COOKIE, cookie).send().await.unwrap()
}

async fn sessions_refuse_forgery_fixation_and_guessing(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let client = plain_client();
    let (_, email) = console_user(&app, "grace").await;

    // Headers on every page: no inline script, no framing, no sniffing.
    let res = client.get(format!("{}/console/sign-in", app.address)).send().await.unwrap();
    let policy = res.headers()[CONTENT_SECURITY_POLICY].to_str().unwrap().to_string();
    assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    let cookie = res.headers()[SET_COOKIE].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");

    // The sign-in form without its cookie is refused, the password unchecked.
    let form = sign_in_form(&app, &client).await;
    let forged = SignInForm { cookie: "forged".into(), csrf: form.csrf.clone() };
    let res = post_sign_in(&app, &client, &forged, &email, PASSWORD, "").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(res.headers(), "reelfarm_session").is_none());

    // A session cookie planted before sign-in is replaced, never adopted; and `next`
    // leads to our own pages only.
    let form = sign_in_form(&app, &client).await;
    let res = post_sign_in(&app, &client, &form, &email, PASSWORD, "reelfarm_session=planted").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[LOCATION], "/console/libraries");
    let first = set_cookie(res.headers(), "reelfarm_session").unwrap();
    assert_ne!(first, "planted");
    assert_eq!(get_page(&app, &client, "/console/libraries", "planted").await.status(), StatusCode::SEE_OTHER);
    let page = get_page(&app, &client, "/console/libraries", &first).await;
    assert_eq!(page.status(), StatusCode::OK);
    let csrf = csrf_field(&page.text().await.unwrap());

    // Writes need the session's token, and a browser's Origin must be ours.
    let post = |path: &str, fields: Vec<(&'static str, String)>, origin: Option<&str>| {
        let mut req = client
            .post(format!("{}{path}", app.address))
            .header(COOKIE, format!("reelfarm_session={first}"))
            .form(&fields);
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let res = post("/console/sign-out", vec![], None).await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "no token at all");
    let res = post("/console/sign-out", vec![("csrf", "guessed".into())], None).await.unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = post("/console/sign-out", vec![("csrf", csrf.clone())], Some("http://127.0.0.2:9")).await.unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(get_page(&app, &client, "/console/libraries", &first).await.status(), StatusCode::OK, "still in");

    // Signing out everywhere ends every session of the user.
    let second = session(&app, &client, &email).await;
    assert_eq!(get_page(&app, &client, "/console/account", &second).await.status(), StatusCode::OK);
    let res = post("/console/account/sessions/end-all", vec![("csrf", csrf)], Some(&app.address)).await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    for ended in [&first, &second] {
        assert_eq!(get_page(&app, &client, "/console/account", ended).await.status(), StatusCode::SEE_OTHER);
    }
    // A part of a page that htmx polls sends the whole page to the sign-in, and back.
    let res = client
        .get(format!("{}/console/jobs/x/videos/0", app.address))
        .header(COOKIE, format!("reelfarm_session={first}"))
        .header("hx-request", "true")
        .header("hx-current-url", format!("{}/console/jobs/x?tab=1", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["hx-redirect"], "/console/sign-in?next=%2Fconsole%2Fjobs%2Fx%3Ftab%3D1");

    // Guessing: a wrong password is a 401 page; past ten attempts for the address (two
    // sign-ins above, eight guesses) even the right password is refused.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let form = sign_in_form(&app, &client).await;
        statuses.push(post_sign_in(&app, &client, &form, &email, "wrong password!", "").await.status());
    }
    assert!(statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED), "{statuses:?}");
    let form = sign_in_form(&app, &client).await;
    let res = post_sign_in(&app, &client, &form, &email, PASSWORD, "").await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(res.headers().contains_key("retry-after"));
    assert!(set_cookie(res.headers(), "reelfarm_session").is_none());
}
