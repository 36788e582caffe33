//! The console's pages: sign-in, libraries and their objects, the account.

use actix_web::cookie::time::Duration as CookieDuration;
use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_domain::asset::{Asset, AssetStatus};
use reelfarm_domain::id::{iso8601, AssetId, LibraryId};
use serde::Deserialize;
use serde_json::json;

use super::visitor::{cookie, no_session_cookie, safe_next, same_token, session_cookie, SignedIn};
use super::{html, see_other, Chrome, ConsoleError};
use crate::error::ApiError;
use crate::limits::client_ip;
use crate::pagination::Page;
use crate::services::{self, sessions};
use crate::state::AppState;

/// The sign-in form's own CSRF cookie (there is no session yet to hold a token).
const SIGN_IN_COOKIE: &str = "reelfarm_sign_in";
/// Objects per page of a library.
const ASSETS_PER_PAGE: u32 = 48;

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
}

/// The sign-in form with a fresh CSRF token in its cookie.
fn sign_in_form(state: &AppState, status: StatusCode, next: &str, email: &str, problem: Option<&str>) -> HttpResponse {
    let csrf = reelfarm_domain::token::random_base62(32);
    let page = SignInPage { chrome: Chrome::anonymous(), csrf: csrf.clone(), next: safe_next(next), email, problem };
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
    let client = sessions::Client { address: client_ip(&req, &state.config.trusted_proxies), user_agent };
    match sessions::sign_in(&state, &form.email, &form.password, client).await {
        Ok((_, token)) => {
            let mut response = see_other(safe_next(next));
            response.add_cookie(&session_cookie(&state, token)).expect("cookies are well-formed");
            let used = cookie(&state, SIGN_IN_COOKIE, String::new(), "/console/sign-in", CookieDuration::ZERO);
            response.add_cookie(&used).expect("cookies are well-formed");
            Ok(response)
        }
        Err(e) if e.key() == "error.unauthorized" => {
            Ok(sign_in_form(&state, StatusCode::UNAUTHORIZED, next, &form.email, Some(&e.body().message)))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct CsrfForm {
    pub csrf: String,
}

#[post("/sign-out")]
pub async fn sign_out(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<CsrfForm>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    sessions::sign_out(&state, &visitor.session, &visitor.token).await?;
    signed_out(&state)
}

/// To the sign-in page, the session cookie removed.
fn signed_out(state: &AppState) -> Answer {
    let mut response = see_other("/console/sign-in");
    response.add_cookie(&no_session_cookie(state)).expect("cookies are well-formed");
    Ok(response)
}

/// A library as listed.
struct LibraryCard {
    id: String,
    name: String,
    kind: &'static str,
    editable: bool,
}

struct SectionView {
    title: String,
    libraries: Vec<LibraryCard>,
}

#[derive(Template)]
#[template(path = "console/libraries.html")]
struct LibrariesPage {
    chrome: Chrome,
    sections: Vec<SectionView>,
}

#[get("/libraries")]
pub async fn libraries_page(state: web::Data<AppState>, visitor: SignedIn) -> Answer {
    let sections = services::libraries::list(&state, &visitor.caller()).await?;
    let sections = sections
        .into_iter()
        .map(|s| SectionView {
            title: s.name,
            libraries: s
                .libraries
                .into_iter()
                .map(|(l, editable)| LibraryCard {
                    id: l.id.to_string(),
                    name: l.name,
                    kind: l.kind.as_str(),
                    editable,
                })
                .collect(),
        })
        .collect();
    Ok(html(StatusCode::OK, &LibrariesPage { chrome: visitor.chrome("libraries"), sections }))
}

/// An object as its tile shows it.
struct AssetTile {
    id: String,
    /// Still arriving or converting: the tile polls for its next state.
    pending: bool,
    error: Option<String>,
    label: String,
    kind: &'static str,
    status: &'static str,
    size: String,
    duration: Option<String>,
    thumb: Option<String>,
}

impl AssetTile {
    fn new(asset: &Asset, state: &AppState) -> AssetTile {
        AssetTile {
            id: asset.id.to_string(),
            pending: matches!(asset.status, AssetStatus::Uploading | AssetStatus::Processing),
            error: asset.error.clone().filter(|_| asset.status == AssetStatus::Failed),
            label: asset.label.clone(),
            kind: asset.kind.map_or("file", |k| k.as_str()),
            status: asset.status.public(),
            size: asset.size.map(readable_size).unwrap_or_else(|| "—".into()),
            duration: asset.duration_ms.filter(|ms| *ms > 0).map(readable_duration),
            thumb: asset.thumb_key.as_deref().map(|k| state.backends.blobs.public_url(k)),
        }
    }
}

#[derive(Template)]
#[template(path = "console/library.html")]
struct LibraryPage {
    chrome: Chrome,
    id: String,
    editable: bool,
    name: String,
    assets: Vec<AssetTile>,
    page: u32,
    more: bool,
}

#[derive(Deserialize)]
pub struct PageNumber {
    page: Option<u32>,
}

#[get("/libraries/{id}")]
pub async fn library_page(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<PageNumber>,
) -> Answer {
    let id = LibraryId::parse(&id).ok_or_else(|| ApiError::not_found("Library"))?;
    let caller = visitor.caller();
    let (library, editable) = services::libraries::visible(&state, &caller, &id).await?;
    let page = Page { limit: ASSETS_PER_PAGE, page: query.page.unwrap_or(1).max(1) };
    let assets = services::assets::list(&state, &caller, &id, page).await?;
    let more = assets.len() == ASSETS_PER_PAGE as usize;
    let assets = assets.iter().map(|a| AssetTile::new(a, &state)).collect();
    let chrome = visitor.chrome("libraries");
    let (id, name) = (id.to_string(), library.name);
    Ok(html(StatusCode::OK, &LibraryPage { chrome, id, editable, name, assets, page: page.page, more }))
}

#[derive(Deserialize)]
pub struct NewObjectForm {
    filename: Option<String>,
}

/// Records an object for the page's uploader: JSON (its id and signed upload address,
/// or the API's error body) for the script that then PUTs the file.
#[post("/libraries/{id}/objects")]
pub async fn add_object(
    req: HttpRequest,
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<NewObjectForm>,
) -> Answer {
    visitor.check_csrf_header(&req)?;
    let id = LibraryId::parse(&id).ok_or_else(|| ApiError::not_found("Library"))?;
    match services::assets::add(&state, &visitor.caller(), form.filename.as_deref(), Some(&id)).await {
        Ok(new) => Ok(HttpResponse::Created().json(json!({"id": new.asset.id, "upload_url": new.upload_url}))),
        Err(e) => Ok(e.error_response_owned()),
    }
}

#[derive(Template)]
#[template(path = "console/tile.html")]
struct TileFragment {
    asset: AssetTile,
}

/// One object's tile (polled while it arrives and converts).
#[get("/objects/{id}/tile")]
pub async fn object_tile(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let id = AssetId::parse(&id).ok_or_else(|| ApiError::not_found("Object"))?;
    let asset = services::assets::get(&state, &visitor.caller(), &id).await?;
    Ok(html(StatusCode::OK, &TileFragment { asset: AssetTile::new(&asset, &state) }))
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
    sessions: Vec<SessionRow>,
}

#[get("/account")]
pub async fn account(state: web::Data<AppState>, visitor: SignedIn) -> Answer {
    let credits = services::users::credits(&state, &visitor.caller()).await?;
    let sessions = sessions::list(&state, &visitor.session.user.id).await?;
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
    let name = visitor.session.user.name.clone();
    Ok(html(StatusCode::OK, &AccountPage { chrome: visitor.chrome("account"), name, credits, sessions }))
}

#[post("/account/sessions/{id}/end")]
pub async fn end_session(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    sessions::end(&state, &visitor.session.user.id, &id).await?;
    if *id == visitor.session.id {
        return signed_out(&state);
    }
    Ok(see_other("/console/account"))
}

#[post("/account/sessions/end-all")]
pub async fn end_all_sessions(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<CsrfForm>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    sessions::end_all(&state, &visitor.session.user.id).await?;
    signed_out(&state)
}

/// `1.4 MB`, `312 KB`, `87 B` (decimal units, as file managers show them).
fn readable_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{} KB", b / 1_000),
        b => format!("{b} B"),
    }
}

/// `1:05`, `12:00`, `1:02:03`.
fn readable_duration(ms: i64) -> String {
    let seconds = (ms + 500) / 1000;
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(readable_size(87), "87 B");
        assert_eq!(readable_size(312_400), "312 KB");
        assert_eq!(readable_size(1_400_000), "1.4 MB");
        assert_eq!(readable_size(2_500_000_000), "2.5 GB");
        assert_eq!(readable_duration(65_000), "1:05");
        assert_eq!(readable_duration(719_600), "12:00");
        assert_eq!(readable_duration(3_723_000), "1:02:03");
    }
}
