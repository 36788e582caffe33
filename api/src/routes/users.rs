//! The caller's own settings: the webhook signing secret (DESIGN.md).

use actix_web::{get, post, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

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
    let secret = state.backends.store.webhook_secret(&caller.user.id).await?;
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
    let secret = state.backends.store.rotate_webhook_secret(&caller.user.id).await?;
    Ok(HttpResponse::Ok().json(WebhookSecret { secret }))
}
