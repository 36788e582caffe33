//! The signed upload: `PUT {upload_url}/uploads/{id}?expires=…&signature=…` with the raw
//! file as body. The signature is checked here; the use case (`reelfarm_app::uploads`)
//! streams the body to the blob store within the upload limits.

use actix_web::http::header;
use actix_web::{put, web, HttpRequest, HttpResponse};
use reelfarm_app::uploads::{self, UploadLimits};
use reelfarm_domain::id::{now_ms, AssetId};
use serde::Deserialize;
use utoipa::IntoParams;

use super::objects::AssetJson;
use crate::error::{ApiError, ErrorBody};
use crate::signing::{self, Refusal};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// Unix time (seconds) the address expires at.
    pub expires: Option<String>,
    /// HMAC of the address.
    pub signature: Option<String>,
}

/// Uploads the file of an object created by `POST /api2/v1/objects`.
#[utoipa::path(
    tag = "objects",
    params(("id" = String, Path), UploadQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "The raw file, up to `REELFARM_MAX_UPLOAD_BYTES`"),
    responses(
        (status = 200, body = AssetJson, description = "Stored; conversion queued (status `processing`)"),
        (status = 400, body = ErrorBody),
        (status = 402, body = ErrorBody, description = "Over the uploader's storage quota (`error.storage_quota_exceeded`); nothing is stored"),
        (status = 403, body = ErrorBody, description = "Expired or invalid signature"),
        (status = 404, body = ErrorBody),
        (status = 408, body = ErrorBody, description = "The body stalled or took too long (`error.request_timeout`); PUT it again"),
        (status = 409, body = ErrorBody, description = "Uploaded already"),
        (status = 413, body = ErrorBody, description = "Larger than the upload limit (`error.payload_too_large`); nothing is stored"),
    )
)]
#[put("/uploads/{id}")]
pub async fn upload(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<UploadQuery>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let announced = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let signed = (query.expires.as_deref(), query.signature.as_deref());
    // No address we signed names anything but one of our ids.
    let id = AssetId::parse(&id).ok_or_else(|| ApiError::forbidden("Invalid upload signature"))?;
    match signing::verify(&state.config, &id, signed.0, signed.1, now_ms()) {
        Ok(()) => {}
        Err(Refusal::Expired) => {
            return Err(ApiError::forbidden("This upload address has expired; add the object again"))
        }
        Err(Refusal::Missing | Refusal::Invalid) => return Err(ApiError::forbidden("Invalid upload signature")),
    }
    let limits = UploadLimits::of(&state.config);
    let asset = uploads::receive(&state.backends, &limits, &id, announced, payload).await?;
    Ok(HttpResponse::Ok().json(AssetJson::new(&asset, &state)))
}
