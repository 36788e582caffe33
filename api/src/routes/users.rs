//! The caller: their account (`GET /user/v1/users`, which existing clients read) and their
//! webhook signing secret.

use actix_web::{get, post, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use reelfarm_app::users;

/// The calling user, as existing clients of this API read it.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserJson {
    /// A stable number of the user (in creation order).
    pub id: i64,
    /// The user's id: what the rest of the API calls a user id.
    pub uuid: String,
    pub name: String,
    /// Always false here: a locked account cannot authenticate, so it never reads this.
    pub locked: bool,
    /// Renders the user may still start (their group's when they belong to one).
    pub credits: i64,
    pub created_at: String,
}

/// The caller's account.
#[utoipa::path(
    tag = "users",
    responses((status = 200, body = UserJson), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/user/v1/users")]
pub async fn me(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let credits = users::credits(state.backends.store(), &caller.user.id).await?;
    let user = &caller.user;
    Ok(HttpResponse::Ok().json(UserJson {
        id: user.number,
        uuid: user.id.to_string(),
        name: user.name.clone(),
        locked: false,
        credits,
        created_at: reelfarm_domain::id::iso8601(user.created_at),
    }))
}

/// The secret that signs the caller's callbacks (Standard Webhooks).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSecret {
    /// `whsec_` + base64.
    pub secret: String,
}

/// The caller's webhook signing secret.
#[utoipa::path(
    tag = "users",
    responses((status = 200, body = WebhookSecret), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/api2/v1/users/me/webhook-secret")]
pub async fn webhook_secret(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let secret = users::webhook_secret(state.backends.store(), &state.sealer, &caller.user.id).await?;
    Ok(HttpResponse::Ok().json(WebhookSecret { secret }))
}

/// Replaces the caller's webhook signing secret and returns the new one.
#[utoipa::path(
    tag = "users",
    responses((status = 200, body = WebhookSecret), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[post("/api2/v1/users/me/webhook-secret")]
pub async fn rotate_webhook_secret(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let secret = users::rotate_webhook_secret(state.backends.store(), &state.sealer, &caller.user.id).await?;
    Ok(HttpResponse::Ok().json(WebhookSecret { secret }))
}
