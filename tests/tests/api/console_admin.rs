//! The console's admin area and first sign-in in a real browser: an operator makes a user,
//! sets credits and memberships and hands out a one-time sign-in link; the user signs in
//! with it, sets a password, and signs in with that. Anyone else finds nothing there, before
//! their form is read.

use reelfarm_tests::browser::Browser;
use reelfarm_tests::{both_modes, Mode, TestApp};

use super::console::{console_user, keep_screenshot, plain_client, session, sign_in, PASSWORD};
use reelfarm_backends::store::{AccountStore, UserStore};

both_modes!(
    an_operator_makes_a_user_who_signs_in_with_a_link_and_sets_a_password,
    the_admin_area_answers_others_404_before_reading_their_form,
);

/// A signed-in user who is no operator gets 404 from every admin form, whatever its body
/// (not a form, no CSRF token): the body is never read. An operator sending the same is
/// told the form is malformed: the same route reads it for them.
async fn the_admin_area_answers_others_404_before_reading_their_form(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let store = app.service.backends.store();
    let (_, nosy) = console_user(&app, "nosy").await;
    let (otto, operator) = console_user(&app, "otto").await;
    store.set_operator(&otto.id, true).await.unwrap();
    let client = plain_client();
    let (nosy, operator) = (session(&app, &client, &nosy).await, session(&app, &client, &operator).await);
    let user = otto.id.to_string();
    let post = |path: String, session: &str| {
        client
            .post(format!("{}{path}", app.address))
            .header("cookie", format!("reelfarm_session={session}"))
            .header("content-type", "application/json")
            .body(r#"{"not": "a form"}"#)
            .send()
    };
    for path in [
        "/console/admin/users".to_string(),
        format!("/console/admin/credits/{user}"),
        format!("/console/admin/users/{user}/groups"),
        format!("/console/admin/users/{user}/groups/g/leave"),
        format!("/console/admin/users/{user}/link"),
    ] {
        assert_eq!(post(path.clone(), &nosy).await.unwrap().status(), 404, "{path}");
        assert_eq!(post(path.clone(), &operator).await.unwrap().status(), 400, "{path}");
    }
    app.stop().await;
}

async fn an_operator_makes_a_user_who_signs_in_with_a_link_and_sets_a_password(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let store = app.service.backends.store();
    let (otto, email) = console_user(&app, "otto").await;
    store.set_operator(&otto.id, true).await.unwrap();
    let browser = Browser::start().await;
    sign_in(&app, &browser, &email).await;
    browser.click_to_page("nav a[href='/console/admin']").await;

    // A new user: refused with another's address, made with their own.
    browser.fill("input[name=name]", "nina").await;
    browser.fill("input[name=email]", &email).await;
    browser.fill("input[name=credits]", "5").await;
    browser.fill("input[name=group]", "crew").await;
    browser.click_to_page("form[action='/console/admin/users'] button").await;
    assert_eq!(browser.text("[role=alert]").await, "email: is the address of another user");
    assert_eq!(browser.value("input[name=group]").await, "crew", "the form keeps what was sent");
    browser.fill("input[name=email]", "Nina@Example.com").await;
    browser.click_to_page("form[action='/console/admin/users'] button").await;
    let link = browser.text("#sign-in-link").await;
    assert!(link.starts_with(&format!("{}/console/sign-in/link/", app.address)), "{link}");
    let nina = store.find_user("nina").await.unwrap();
    assert_eq!((nina.credits, nina.operator), (5, false));
    assert_eq!(browser.texts("tr.account td:first-child strong").await, ["nina", "otto"]);
    assert_eq!(browser.texts("tr.account td:first-child .muted").await, ["nina@example.com", "otto@example.com"]);
    assert_eq!(browser.texts("tr.account .status").await, ["operator"]);

    // Credits, and memberships: added to one group, taken out of another.
    let row = format!("tr.account form[action='/console/admin/credits/{}']", nina.id);
    browser.fill(&format!("{row} input[name=credits]"), "9").await;
    browser.click_to_page(&format!("{row} button")).await;
    assert_eq!(store.user(&nina.id).await.unwrap().credits, 9);
    let join = format!("form[action='/console/admin/users/{}/groups']", nina.id);
    browser.fill(&format!("{join} input[name=group]"), "night").await;
    browser.click_to_page(&format!("{join} button")).await;
    let crew = store.find_group("crew").await.unwrap();
    browser
        .click_to_page(&format!("form[action='/console/admin/users/{}/groups/{}/leave'] button", nina.id, crew.id))
        .await;
    let groups: Vec<String> = store.groups_of(&nina.id).await.unwrap().into_iter().map(|g| g.name).collect();
    assert_eq!(groups, ["night"]);
    let group_row = format!("form[action='/console/admin/credits/{}']", crew.id);
    browser.fill(&format!("{group_row} input[name=credits]"), "40").await;
    browser.click_to_page(&format!("{group_row} button")).await;
    assert_eq!(store.find_group("crew").await.unwrap().credits, 40);
    keep_screenshot(&browser, "admin").await;
    browser.click_to_page("header form button").await;
    browser.wait_for_path("/console/sign-in").await;

    // The link signs nina in once; she sets a password without an old one.
    browser.goto(&link).await;
    browser.click_to_page("form[action^='/console/sign-in/link/'] button").await;
    browser.wait_for_path("/console/account").await;
    assert_eq!(browser.value("input[name=email]").await, "nina@example.com");
    assert!(browser.texts("input[name=current_password]").await.is_empty(), "no current password asked");
    browser.fill("input[name=password]", &"long ".repeat(60)).await;
    browser.click_to_page("form[action='/console/account/sign-in'] button").await;
    assert_eq!(browser.text("[role=alert]").await, "The password must be at most 256 characters long.");
    browser.fill("input[name=password]", PASSWORD).await;
    browser.click_to_page("form[action='/console/account/sign-in'] button").await;
    assert!(browser.text("[role=status]").await.starts_with("Saved"));
    assert!(browser.texts("nav a[href='/console/admin']").await.is_empty(), "no admin area for nina");
    browser.goto(&format!("{}/console/admin", app.address)).await;
    assert_eq!(browser.text("h1").await, "Not Found");

    browser.goto(&format!("{}/console/account", app.address)).await;
    browser.click_to_page("header form button").await;
    browser.goto(&link).await;
    browser.click_to_page("form[action^='/console/sign-in/link/'] button").await;
    assert!(browser.text("[role=alert]").await.starts_with("This sign-in link is used, expired or unknown"));
    sign_in(&app, &browser, "nina@example.com").await;

    // Signed in with her password, a change asks for it.
    browser.goto(&format!("{}/console/account", app.address)).await;
    browser.fill("input[name=current_password]", "a wrong password").await;
    browser.fill("input[name=password]", "a new long password").await;
    browser.click_to_page("form[action='/console/account/sign-in'] button").await;
    assert_eq!(browser.text("[role=alert]").await, "The current password is wrong.");
}
