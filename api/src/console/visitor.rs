//! Who is looking: the session of the cookie, as an extractor. A handler that takes a
//! [`SignedIn`] serves signed-in visitors only; others are sent to sign in (and brought
//! back afterwards).

use std::future::Future;
use std::pin::Pin;

use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::{web, FromRequest, HttpRequest};
use subtle::ConstantTimeEq;

use super::{assets, Chrome, ConsoleError, Who};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;
use reelfarm_app::sessions::{self, Session, SESSION_TTL};

/// The cookie holding the session's token.
pub const SESSION_COOKIE: &str = "reelfarm_session";

/// A signed-in visitor: their session and the token of its cookie.
pub struct SignedIn {
    pub session: Session,
    pub token: String,
}

impl SignedIn {
    /// The visitor as the services know callers.
    pub fn caller(&self) -> Caller {
        Caller { user: self.session.user.clone(), token_id: format!("session:{}", self.session.id) }
    }

    /// The layout of a page in `section`.
    pub fn chrome(&self, section: &'static str) -> Chrome {
        let user = &self.session.user;
        let who = Who { name: user.name.clone(), csrf: self.session.csrf.clone(), operator: user.operator };
        Chrome { assets: &assets::URLS, who: Some(who), section }
    }

    /// [`SignedIn::check_csrf`] of the `x-csrf-token` header (scripts and htmx send it).
    pub fn check_csrf_header(&self, req: &HttpRequest) -> Result<(), ConsoleError> {
        self.check_csrf(req.headers().get("x-csrf-token").and_then(|v| v.to_str().ok()).unwrap_or_default())
    }

    /// Refuses a state-changing request without this session's CSRF token (given as the
    /// form's `csrf` field or htmx's `x-csrf-token` header).
    pub fn check_csrf(&self, given: &str) -> Result<(), ConsoleError> {
        if same_token(given, &self.session.csrf) {
            Ok(())
        } else {
            Err(ApiError::forbidden("The form has expired; reload the page and try again").into())
        }
    }
}

/// Whether `given` is the (non-empty) `expected` token, compared in constant time.
pub fn same_token(given: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// A cookie of the console: HttpOnly, same-site, Secure when the public address is
/// HTTPS.
pub fn cookie<'a>(
    state: &AppState,
    name: &'a str,
    value: String,
    path: &'a str,
    max_age: CookieDuration,
) -> Cookie<'a> {
    Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.config.api.public_url.starts_with("https://"))
        .max_age(max_age)
        .finish()
}

/// The session cookie for `token`.
pub fn session_cookie(state: &AppState, token: String) -> Cookie<'static> {
    cookie(state, SESSION_COOKIE, token, "/console", CookieDuration::seconds(SESSION_TTL.as_secs() as i64))
}

/// The session cookie's removal.
pub fn no_session_cookie(state: &AppState) -> Cookie<'static> {
    cookie(state, SESSION_COOKIE, String::new(), "/console", CookieDuration::ZERO)
}

async fn find(req: HttpRequest) -> Result<SignedIn, ConsoleError> {
    let state = req.app_data::<web::Data<AppState>>().expect("AppState is registered").clone();
    let token = req.cookie(SESSION_COOKIE).map(|c| c.value().to_string()).filter(|t| !t.is_empty());
    if let Some(token) = token {
        if let Some(session) = sessions::current(&state.backends, &token).await? {
            return Ok(SignedIn { session, token });
        }
    }
    // htmx asks for parts of a page: the whole page is to go to the sign-in, and back to
    // that page afterwards.
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let partial = header("hx-request") == Some("true");
    let page = header("hx-current-url").and_then(|u| url::Url::parse(u).ok()).map(|u| match u.query() {
        Some(query) => format!("{}?{query}", u.path()),
        None => u.path().to_string(),
    });
    // Back to where they were going, when that was a page.
    let next = match page {
        Some(page) if partial => page,
        _ if req.method() == Method::GET && !partial => req.uri().to_string(),
        _ => "/console".to_string(),
    };
    Err(ConsoleError::SignIn { next, partial })
}

impl FromRequest for SignedIn {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<SignedIn, ConsoleError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        Box::pin(find(req.clone()))
    }
}

/// A signed-in operator. Anyone else finds nothing there (404), before anything of the
/// request's body is read: admin handlers take the body as a payload and read their form
/// after this.
pub struct Operator(pub SignedIn);

impl std::ops::Deref for Operator {
    type Target = SignedIn;

    fn deref(&self) -> &SignedIn {
        &self.0
    }
}

impl FromRequest for Operator {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Operator, ConsoleError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let visitor = find(req).await?;
            if !visitor.session.user.operator {
                return Err(ApiError::not_found("Page").into());
            }
            Ok(Operator(visitor))
        })
    }
}

/// Where a sign-in may lead: a console page of ours, nothing else (no open redirect).
pub fn safe_next(next: &str) -> &str {
    let ours = next.starts_with("/console") && !next.starts_with("//") && !next.contains('\\');
    if ours {
        next
    } else {
        "/console/libraries"
    }
}
