//! The developer portal: personal access tokens, made, listed and revoked.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse};
use askama::Template;
use reelfarm_backends::store::TokenRecord;
use reelfarm_domain::id::{iso8601, now_ms};
use serde::Deserialize;

use super::pages::CsrfForm;
use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::state::AppState;
use reelfarm_app::tokens::{self, LIFETIMES};
use reelfarm_app::{users, AppError};

/// A token as the portal lists it.
struct TokenRow {
    id: String,
    name: String,
    prefix: String,
    /// `active`, `revoked` or `expired`.
    status: &'static str,
    last_used: String,
    expires: String,
}

impl TokenRow {
    fn new(token: TokenRecord, now: i64) -> TokenRow {
        let status = match token.revoked_at {
            Some(_) => "revoked",
            None if token.expires_at <= now => "expired",
            None => "active",
        };
        TokenRow {
            id: token.id,
            name: if token.name.is_empty() { "(made by an operator)".into() } else { token.name },
            prefix: token.prefix,
            status,
            last_used: token.last_used_at.map_or_else(|| "never".into(), iso8601),
            expires: iso8601(token.expires_at),
        }
    }
}

#[derive(Template)]
#[template(path = "console/developer.html")]
struct DeveloperPage {
    chrome: Chrome,
    tokens: Vec<TokenRow>,
    lifetimes: [u32; 4],
    /// A token just made: its secret, shown this once.
    created: Option<String>,
    problems: Vec<String>,
    /// The secret that signs the callbacks (spec §6), or why it cannot be read.
    webhook_secret: Result<String, String>,
    /// The secret was just replaced.
    rotated: bool,
}

/// What the portal shows besides its tokens.
#[derive(Default)]
struct Outcome {
    status: Option<StatusCode>,
    created: Option<String>,
    problems: Vec<String>,
    rotated: bool,
}

/// The portal after `outcome` (a new token's secret, problems, a rotated secret).
async fn portal(state: &AppState, visitor: &SignedIn, outcome: Outcome) -> Result<HttpResponse, ConsoleError> {
    let now = now_ms();
    let caller = visitor.caller();
    let (store, user) = (state.backends.store(), &caller.user.id);
    let tokens = tokens::list(store, user).await?.into_iter().map(|t| TokenRow::new(t, now)).collect();
    let webhook_secret = match users::webhook_secret(store, &state.sealer, user).await {
        Ok(secret) => Ok(secret),
        Err(AppError::Conflict(unreadable)) => Err(unreadable),
        Err(e) => return Err(e.into()),
    };
    let Outcome { status, created, problems, rotated } = outcome;
    let page = DeveloperPage {
        chrome: visitor.chrome("developer"),
        tokens,
        lifetimes: LIFETIMES,
        created,
        problems,
        webhook_secret,
        rotated,
    };
    Ok(html(status.unwrap_or(StatusCode::OK), &page))
}

#[get("/developer")]
pub async fn developer(state: web::Data<AppState>, visitor: SignedIn) -> Result<HttpResponse, ConsoleError> {
    portal(&state, &visitor, Outcome::default()).await
}

#[derive(Deserialize)]
pub struct NewTokenForm {
    csrf: String,
    name: Option<String>,
    days: Option<String>,
}

/// Makes a token and shows its secret in the answer itself (never in an address).
#[post("/developer/tokens")]
pub async fn create_token(
    state: web::Data<AppState>,
    visitor: SignedIn,
    form: web::Form<NewTokenForm>,
) -> Result<HttpResponse, ConsoleError> {
    visitor.check_csrf(&form.csrf)?;
    let user = &visitor.session.user.id;
    match tokens::create(state.backends.store(), user, form.name.as_deref(), form.days.as_deref()).await {
        Ok((_, secret)) => portal(&state, &visitor, Outcome { created: Some(secret), ..Outcome::default() }).await,
        Err(AppError::Invalid(errors)) => {
            let problems = errors.iter().map(|f| format!("{}: {}", f.field, f.message)).collect();
            portal(&state, &visitor, Outcome { status: Some(StatusCode::BAD_REQUEST), problems, ..Outcome::default() })
                .await
        }
        Err(e) => Err(e.into()),
    }
}

#[post("/developer/tokens/{id}/revoke")]
pub async fn revoke_token(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, ConsoleError> {
    visitor.check_csrf(&form.csrf)?;
    tokens::revoke(state.backends.store(), &visitor.session.user.id, &id).await?;
    Ok(see_other("/console/developer"))
}

/// Replaces the webhook signing secret; callbacks are signed with the new one from now on.
#[post("/developer/webhook-secret/rotate")]
pub async fn rotate_webhook_secret(
    state: web::Data<AppState>,
    visitor: SignedIn,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, ConsoleError> {
    visitor.check_csrf(&form.csrf)?;
    users::rotate_webhook_secret(state.backends.store(), &state.sealer, &visitor.session.user.id).await?;
    portal(&state, &visitor, Outcome { rotated: true, ..Outcome::default() }).await
}
