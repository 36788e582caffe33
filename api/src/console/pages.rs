//! The console's own pages: sign-in and sign-out, the account with its sessions.

use actix_web::cookie::time::Duration as CookieDuration;
use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::iso8601;
use serde::Deserialize;

use super::visitor::{cookie, no_session_cookie, safe_next, same_token, session_cookie, SignedIn};
use super::{html, see_other, Chrome, ConsoleError};
use crate::limits::client_ip;
use crate::services::{self, sessions};
use crate::state::AppState;
use reelfarm_app::sessions::NewSignIn;
use reelfarm_app::users;

/// The sign-in form's own CSRF cookie (there is no session yet to hold a token).
const SIGN_IN_COOKIE: &str = "reelfarm_sign_in";

/// What a page handler answers.
type Answer = Result<HttpResponse, ConsoleError>;

#[get("")]
pub async fn home(visitor: Option<SignedIn>) -> HttpResponse {
    see_other(if visitor.is_some() { "/console/libraries" } else { "/console/sign-in" })
}

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    chrome: Chrome,
    csrf: String,
    next: &'a str,
    email: &'a str,
    problem: Option<&'a str>,
    /// The token of a one-time sign-in link: the page offers to use it instead.
    link: Option<&'a str>,
}

/// The sign-in form with a fresh CSRF token in its cookie.
fn sign_in_form(state: &AppState, status: StatusCode, next: &str, email: &str, problem: Option<&str>) -> HttpResponse {
    sign_in_page_with(state, status, SignInPage { next, email, problem, ..blank_sign_in() })
}

fn blank_sign_in() -> SignInPage<'static> {
    SignInPage { chrome: Chrome::anonymous(), csrf: String::new(), next: "", email: "", problem: None, link: None }
}

/// `page` with a fresh CSRF token, kept in its cookie too.
fn sign_in_page_with(state: &AppState, status: StatusCode, page: SignInPage<'_>) -> HttpResponse {
    let csrf = reelfarm_domain::token::random_base62(32);
    let page = SignInPage { csrf: csrf.clone(), next: safe_next(page.next), ..page };
    let mut response = html(status, &page);
    let kept = cookie(state, SIGN_IN_COOKIE, csrf, "/console/sign-in", CookieDuration::hours(1));
    response.add_cookie(&kept).expect("cookies are well-formed");
    response
}

#[derive(Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

#[get("/sign-in")]
pub async fn sign_in_page(state: web::Data<AppState>, query: web::Query<NextQuery>) -> HttpResponse {
    sign_in_form(&state, StatusCode::OK, query.next.as_deref().unwrap_or_default(), "", None)
}

#[derive(Deserialize)]
pub struct SignInForm {
    email: String,
    password: String,
    csrf: String,
    next: Option<String>,
}

#[post("/sign-in")]
pub async fn sign_in(req: HttpRequest, state: web::Data<AppState>, form: web::Form<SignInForm>) -> Answer {
    let next = form.next.as_deref().unwrap_or_default();
    let expected = req.cookie(SIGN_IN_COOKIE).map(|c| c.value().to_string()).unwrap_or_default();
    if !same_token(&form.csrf, &expected) {
        let problem = Some("The form has expired; please sign in again");
        return Ok(sign_in_form(&state, StatusCode::FORBIDDEN, next, &form.email, problem));
    }
    let user_agent = req.headers().get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let client =
        reelfarm_app::sessions::Client { address: client_ip(&req, &state.config.api.trusted_proxies), user_agent };
    match sessions::sign_in(&state, &form.email, &form.password, client).await {
        Ok((_, token)) => signed_in(&state, next, token),
        Err(e) if e.key() == ErrorKey::Unauthorized => {
            Ok(sign_in_form(&state, StatusCode::UNAUTHORIZED, next, &form.email, Some(&e.body().message)))
        }
        Err(e) => Err(e.into()),
    }
}

/// A one-time sign-in link: a page whose button uses it (a link opened by a mail
/// scanner's preview is not used up).
#[get("/sign-in/link/{token}")]
pub async fn link_page(state: web::Data<AppState>, token: web::Path<String>) -> HttpResponse {
    sign_in_page_with(&state, StatusCode::OK, SignInPage { link: Some(&token), ..blank_sign_in() })
}

#[post("/sign-in/link/{token}")]
pub async fn use_link(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    let expected = req.cookie(SIGN_IN_COOKIE).map(|c| c.value().to_string()).unwrap_or_default();
    let link = SignInPage { link: Some(&token), ..blank_sign_in() };
    if !same_token(&form.csrf, &expected) {
        let problem = Some("The form has expired; please try again");
        return Ok(sign_in_page_with(&state, StatusCode::FORBIDDEN, SignInPage { problem, ..link }));
    }
    let user_agent = req.headers().get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let client =
        reelfarm_app::sessions::Client { address: client_ip(&req, &state.config.api.trusted_proxies), user_agent };
    match sessions::sign_in_with_link(&state, &token, client).await {
        Ok((_, session)) => signed_in(&state, "/console/account#sign-in", session),
        Err(e) if e.key() == ErrorKey::Unauthorized => {
            Ok(sign_in_form(&state, StatusCode::UNAUTHORIZED, "", "", Some(&e.body().message)))
        }
        Err(e) => Err(e.into()),
    }
}

/// To `next`, with the session cookie of `token`; the sign-in form's cookie removed.
fn signed_in(state: &AppState, next: &str, token: String) -> Answer {
    let mut response = see_other(safe_next(next));
    response.add_cookie(&session_cookie(state, token)).expect("cookies are well-formed");
    let used = cookie(state, SIGN_IN_COOKIE, String::new(), "/console/sign-in", CookieDuration::ZERO);
    response.add_cookie(&used).expect("cookies are well-formed");
    Ok(response)
}

#[derive(Deserialize)]
pub struct CsrfForm {
    pub csrf: String,
}

#[post("/sign-out")]
pub async fn sign_out(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<CsrfForm>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    reelfarm_app::sessions::sign_out(&state.backends, &visitor.session, &visitor.token).await?;
    signed_out(&state)
}

/// To the sign-in page, the session cookie removed.
fn signed_out(state: &AppState) -> Answer {
    let mut response = see_other("/console/sign-in");
    response.add_cookie(&no_session_cookie(state)).expect("cookies are well-formed");
    Ok(response)
}

/// A session as the account page lists it.
struct SessionRow {
    id: String,
    started: String,
    browser: String,
    address: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "console/account.html")]
struct AccountPage {
    chrome: Chrome,
    name: String,
    credits: i64,
    usage: reelfarm_app::users::Usage,
    sessions: Vec<SessionRow>,
    /// The address the user signs in with, if any.
    email: Option<String>,
    /// The sign-in form needs the current password.
    asks_current: bool,
    /// The sign-in form's outcome: a problem, or that it was saved.
    problem: Option<String>,
    saved: bool,
}

impl AccountPage {
    fn month(&self) -> String {
        iso8601(self.usage.since)[..7].to_string()
    }

    fn stored(&self) -> String {
        super::libraries::readable_size(self.usage.stored_bytes)
    }
}

/// The account page, with the outcome of its sign-in form.
async fn account_page(state: &AppState, visitor: &SignedIn, problem: Option<String>, saved: bool) -> Answer {
    let caller = visitor.caller();
    let (store, user) = (state.backends.store(), &caller.user.id);
    let (credits, usage) = (users::credits(store, user).await?, users::usage(store, user).await?);
    let email = services::accounts::email(state, &caller).await?;
    let sessions = reelfarm_app::sessions::list(&state.backends, &visitor.session.user.id).await?;
    let sessions = sessions
        .into_iter()
        .map(|s| SessionRow {
            current: s.id == visitor.session.id,
            started: iso8601(s.created_at),
            browser: s.user_agent,
            address: s.address,
            id: s.id,
        })
        .collect();
    let page = AccountPage {
        chrome: visitor.chrome("account"),
        name: visitor.session.user.name.clone(),
        credits,
        usage,
        sessions,
        asks_current: email.is_some() && !visitor.session.by_link,
        email,
        saved,
        problem,
    };
    Ok(html(if page.problem.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, &page))
}

#[get("/account")]
pub async fn account(state: web::Data<AppState>, visitor: SignedIn) -> Answer {
    account_page(&state, &visitor, None, false).await
}

#[derive(Deserialize)]
pub struct SignInSettings {
    csrf: String,
    email: String,
    password: String,
    current_password: Option<String>,
}

/// Sets the e-mail address and password the user signs in with.
#[post("/account/sign-in")]
pub async fn set_sign_in(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<SignInSettings>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let new = NewSignIn {
        email: &form.email,
        password: &form.password,
        current_password: form.current_password.as_deref().unwrap_or_default(),
    };
    match services::accounts::set_sign_in(&state, &visitor.session, &new).await {
        Ok(()) => account_page(&state, &visitor, None, true).await,
        Err(e) if e.key() == ErrorKey::ValidationFailed => {
            let problem = e.body().errors.iter().map(sentence).collect::<Vec<_>>().join(" ");
            account_page(&state, &visitor, Some(problem), false).await
        }
        Err(e) => Err(e.into()),
    }
}

/// A field error of the sign-in form as a sentence.
fn sentence(e: &crate::error::FieldError) -> String {
    let subject = match e.field.as_str() {
        "email" => "The e-mail address",
        "current_password" => "The current password",
        // The password's own messages name it.
        _ => {
            let mut chars = e.message.chars();
            let first: String = chars.next().into_iter().flat_map(char::to_uppercase).collect();
            return format!("{first}{}.", chars.as_str());
        }
    };
    format!("{subject} {}.", e.message)
}

#[post("/account/sessions/{id}/end")]
pub async fn end_session(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    reelfarm_app::sessions::end(&state.backends, &visitor.session.user.id, &id).await?;
    if *id == visitor.session.id {
        return signed_out(&state);
    }
    Ok(see_other("/console/account"))
}

#[post("/account/sessions/end-all")]
pub async fn end_all_sessions(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<CsrfForm>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    reelfarm_app::sessions::end_all(&state.backends, &visitor.session.user.id).await?;
    signed_out(&state)
}
