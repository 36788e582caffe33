//! Linked accounts in a real browser: YouTube connected through the consent page of the
//! fake Google (speaking the real authorization-code flow with PKCE), declined once,
//! allowed, stored sealed for the upload channels, and disconnected; a forged callback
//! links nothing.

use reelfarm_backends::integration::{linked_account, Sealer};
use reelfarm_domain::integration::{LinkedAccount, Provider};
use reelfarm_tests::browser::Browser;
use reelfarm_tests::google::{self, FakeGoogle};
use reelfarm_tests::{both_modes, Mode, TestApp};

use super::console::{console_user, keep_screenshot, sign_in};

both_modes!(a_youtube_account_is_linked_through_the_consent_page_and_disconnected);

async fn a_youtube_account_is_linked_through_the_consent_page_and_disconnected(mode: Mode) {
    let fake = FakeGoogle::start().await;
    let (auth, token) = (fake.auth_url(), fake.oauth_url());
    let settings = [
        ("REELFARM_GOOGLE_AUTH_URL", auth.as_str()),
        ("REELFARM_GOOGLE_OAUTH_URL", token.as_str()),
        ("REELFARM_GOOGLE_CLIENT_ID", google::CLIENT_ID),
        ("REELFARM_GOOGLE_CLIENT_SECRET", google::CLIENT_SECRET),
    ];
    let app = TestApp::spawn_with(mode, &settings).await;
    let (user, email) = console_user(&app, "yuki").await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.click_to_page("nav a[href='/console/accounts']").await;
    assert_eq!(browser.texts(".provider .status").await, ["not linked", "not linked"]);

    // Declined at Google: nothing linked, and the page says why.
    browser.click_to_page("#provider-youtube a.button").await;
    assert!(browser.text("#scope").await.contains("https://www.googleapis.com/auth/youtube.upload"));
    browser.click_to_page("#deny").await;
    assert_eq!(browser.text("[role=alert]").await, "The account was not linked: you did not allow access");

    // Allowed: the code becomes a sealed refresh token the upload channels can use.
    browser.click_to_page("#provider-youtube a.button").await;
    browser.click_to_page("#allow").await;
    browser.wait_for_path("/console/accounts?linked=youtube").await;
    assert_eq!(browser.text("[role=status]").await, "Your YouTube account is linked.");
    assert_eq!(browser.texts(".provider .status").await, ["linked", "not linked"]);
    assert_eq!(fake.counts().codes_exchanged, 1);
    let store = app.service.backends.store();
    let sealer = Sealer::new(&app.config);
    let expected = LinkedAccount {
        client_id: google::CLIENT_ID.into(),
        client_secret: google::CLIENT_SECRET.into(),
        refresh_token: google::REFRESH_TOKEN.into(),
    };
    assert_eq!(linked_account(store, &sealer, &user.id, Provider::YouTube).await.unwrap(), Some(expected));
    keep_screenshot(&browser, "accounts").await;

    // A callback this session did not begin (a forged one, or a replay) links nothing.
    browser.goto(&format!("{}/console/accounts/callback?state=forged&code=4/stolen", app.address)).await;
    assert!(browser.text("[role=alert]").await.starts_with("This answer from Google does not belong to a linking"));
    assert_eq!(fake.counts().codes_exchanged, 1);

    browser.click_to_page("#provider-youtube button.danger").await;
    assert_eq!(browser.texts(".provider .status").await, ["not linked", "not linked"]);
    assert_eq!(linked_account(store, &sealer, &user.id, Provider::YouTube).await.unwrap(), None);
}
