//! The console: web pages served by the api under `/console`, rendered on the
//! server (askama) with htmx for partial updates. Its handlers, like the API's, only
//! parse, call a service and render: the rules live in `crate::services`.
//!
//! Every page answers with a Content-Security-Policy that allows no inline script, and
//! every state-changing request must carry its session's CSRF token (and, when the
//! browser says where it comes from, come from our own origin).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, HttpResponse, ResponseError};
use askama::Template;

use reelfarm_backends::{Blobs, Config};

use crate::error::ApiError;

mod accounts;
mod admin;
mod assets;
mod batch;
mod developer;
mod jobs;
mod libraries;
mod pages;
mod reference;
mod render_form;
mod studio;
mod templates;
mod visitor;

/// The console's routes, answering under `policy`.
pub fn scope(
    policy: web::Data<Policy>,
) -> actix_web::Scope<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let forms = web::FormConfig::default().limit(64 * 1024).error_handler(|e, _| {
        ConsoleError::from(ApiError::invalid_request(format!("The form could not be read: {e}"))).into()
    });
    web::scope("/console")
        .app_data(forms)
        .app_data(policy)
        .wrap(from_fn(guard))
        .service(assets::file)
        .service(pages::home)
        .service(pages::sign_in_page)
        .service(pages::sign_in)
        .service(pages::link_page)
        .service(pages::use_link)
        .service(pages::sign_out)
        .service(libraries::libraries_page)
        .service(libraries::library_page)
        .service(libraries::add_object)
        .service(libraries::object_tile)
        .service(libraries::object_page)
        .service(libraries::rename_object)
        .service(libraries::delete_object)
        .service(studio::new_template)
        .service(templates::templates_page)
        .service(templates::template_page)
        .service(templates::render)
        .service(batch::batch)
        .service(studio::studio)
        .service(studio::edit_document)
        .service(studio::frame)
        .service(studio::draft)
        .service(jobs::jobs_page)
        .service(jobs::job_page)
        .service(jobs::video_card)
        .service(jobs::deliveries_fragment)
        .service(jobs::cancel)
        .service(jobs::redeliver)
        .service(developer::developer)
        .service(developer::create_token)
        .service(developer::revoke_token)
        .service(developer::rotate_webhook_secret)
        .service(reference::reference)
        .service(pages::account)
        .service(pages::end_session)
        .service(pages::end_all_sessions)
        .service(pages::set_sign_in)
        .service(accounts::accounts)
        .service(accounts::connect)
        .service(accounts::callback)
        .service(accounts::disconnect)
        .service(admin::admin)
        .service(admin::create_user)
        .service(admin::set_credits)
        .service(admin::join_group)
        .service(admin::leave_group)
        .service(admin::sign_in_link)
        .default_service(web::to(|| async { Err::<HttpResponse, _>(ConsoleError::from(ApiError::not_found("Page"))) }))
}

/// `/` leads to the console.
pub async fn root() -> HttpResponse {
    see_other("/console")
}

/// What the layout shows around every page.
pub struct Chrome {
    pub assets: &'static assets::Urls,
    pub who: Option<Who>,
    /// The navigation entry of the page (`libraries`, `account`, …).
    pub section: &'static str,
}

/// The signed-in visitor, as the layout shows them.
pub struct Who {
    pub name: String,
    pub csrf: String,
    /// Sees the admin area.
    pub operator: bool,
}

impl Chrome {
    /// The chrome of a page seen signed out.
    pub fn anonymous() -> Chrome {
        Chrome { assets: &assets::URLS, who: None, section: "" }
    }

    /// The session's CSRF token, for the forms of the page.
    pub fn csrf(&self) -> &str {
        self.who.as_ref().map_or("", |w| w.csrf.as_str())
    }
}

/// A console request that did not end in its page.
#[derive(Debug)]
pub enum ConsoleError {
    /// Not signed in: to the sign-in page, then back to `next`; `partial` when htmx asked
    /// for a part of a page (the browser is then sent there with `HX-Redirect`).
    SignIn { next: String, partial: bool },
    /// What the API would have answered, shown as a page.
    Api(ApiError),
}

impl From<ApiError> for ConsoleError {
    fn from(e: ApiError) -> ConsoleError {
        ConsoleError::Api(e)
    }
}

impl From<reelfarm_app::AppError> for ConsoleError {
    fn from(e: reelfarm_app::AppError) -> ConsoleError {
        ConsoleError::Api(e.into())
    }
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsoleError::SignIn { .. } => f.write_str("sign-in needed"),
            ConsoleError::Api(e) => write!(f, "{}", e.body().message),
        }
    }
}

#[derive(Template)]
#[template(path = "console/problem.html")]
struct ProblemPage<'a> {
    chrome: Chrome,
    heading: &'a str,
    message: &'a str,
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignIn { partial: true, .. } => StatusCode::OK,
            ConsoleError::SignIn { .. } => StatusCode::SEE_OTHER,
            ConsoleError::Api(e) => e.status_code(),
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            ConsoleError::SignIn { next, partial } => {
                let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
                let to = format!("/console/sign-in?{query}");
                if *partial {
                    HttpResponse::Ok().insert_header(("hx-redirect", to)).finish()
                } else {
                    see_other(&to)
                }
            }
            ConsoleError::Api(e) => {
                let status = e.status_code();
                let heading = status.canonical_reason().unwrap_or("Error");
                let page = ProblemPage { chrome: Chrome::anonymous(), heading, message: &e.body().message };
                let mut response = html(status, &page);
                if let Some(retry) = e.error_response().headers().get(header::RETRY_AFTER) {
                    response.headers_mut().insert(header::RETRY_AFTER, retry.clone());
                }
                response
            }
        }
    }
}

/// A page as HTML with `status`.
fn html(status: StatusCode, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => HttpResponse::build(status).content_type("text/html; charset=utf-8").body(body),
        Err(e) => {
            tracing::error!(error = %e, "a console page did not render");
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("The page failed to render")
        }
    }
}

/// 303 to `to` (after a form: the browser follows with a GET).
fn see_other(to: &str) -> HttpResponse {
    HttpResponse::SeeOther().insert_header((header::LOCATION, to)).finish()
}

/// Around every console request: cross-origin writes refused; security headers on every
/// answer; pages never cached (static files say so themselves).
async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let policy = req.app_data::<web::Data<Policy>>().expect("the console's policy is registered").clone();
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD);
    let origin = req.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok());
    if writes && origin.is_some_and(|o| o != policy.origin) {
        let refused = ConsoleError::from(ApiError::forbidden("The request comes from another site"));
        return Ok(req.into_response(refused.error_response()).map_into_right_body());
    }
    let mut res = next.call(req).await?.map_into_left_body();
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, policy.content_security.clone());
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(res)
}

/// `scheme://host[:port]` of an absolute address.
fn public_origin(url: &str) -> String {
    url::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}

/// What the console's guard holds to, made once from the configuration.
pub struct Policy {
    /// Our public origin: writes from any other are refused.
    origin: String,
    /// Scripts and styles from our files only; images and media also from where the blob
    /// store serves files when that is another origin: its public base, or the object
    /// store that `/files/…` redirects to with a presigned address.
    content_security: HeaderValue,
}

impl Policy {
    pub fn new(config: &Config, blobs: &Blobs) -> Policy {
        let origin = public_origin(&config.api.public_url);
        let mut media = vec!["'self'".to_string()];
        for url in blobs.served_from() {
            let served = public_origin(url);
            if !served.is_empty() && served != origin && !media.contains(&served) {
                media.push(served);
            }
        }
        let media = media.join(" ");
        let policy = format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src {media} data:; media-src {media}; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        );
        let content_security = HeaderValue::from_str(&policy).expect("origins are ASCII without control characters");
        Policy { origin, content_security }
    }
}
