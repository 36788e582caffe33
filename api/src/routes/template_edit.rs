//! Templates made and changed by their owner (additions; the use cases are
//! `reelfarm_app::template_edit`): create, save (every save a new version), duplicate,
//! delete, versions and restore.

use actix_web::{delete, get, post, put, web, HttpRequest, HttpResponse};
use reelfarm_domain::id::{TemplateId, UserId};
use reelfarm_domain::template::stored::TemplateVersion;
use serde::Serialize;
use utoipa::ToSchema;

use super::templates::{TemplateJson, OPERATOR};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids;
use crate::pagination::PageQuery;
use crate::services::template_edit;
use crate::state::AppState;

/// A saved version of a template (an addition).
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateVersionJson {
    /// 1 for the first, one more with every save.
    pub version: i64,
    /// The template's name in this version.
    pub name: String,
    /// Whether jobs render this version now.
    pub current: bool,
    /// Id of the user who saved it, or `operator` for an import without an owner.
    pub saved_by: String,
    pub created_at: String,
    /// The template document of this version; only in `GET …/versions/{version}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub json: Option<serde_json::Value>,
}

impl TemplateVersionJson {
    fn new(v: TemplateVersion, current: i64, with_json: bool) -> TemplateVersionJson {
        let json: serde_json::Value = serde_json::from_str(&v.json).unwrap_or_default();
        TemplateVersionJson {
            version: v.version,
            name: json["name"].as_str().unwrap_or_default().to_string(),
            current: v.version == current,
            saved_by: v.saved_by.as_ref().map_or_else(|| OPERATOR.to_string(), UserId::to_string),
            created_at: reelfarm_domain::id::iso8601(v.created_at),
            json: with_json.then_some(json),
        }
    }
}

/// Creates a template owned by the caller from a template document (`docs/templates.md`);
/// its thumb and preview are rendered in the background. Problems of the document are
/// listed at their JSON path under `json`.
#[utoipa::path(
    tag = "templates",
    request_body(content = crate::services::template_edit::TemplateBody, content_type = "application/json"),
    responses(
        (status = 200, body = TemplateJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates")]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: serde_json::Value = crate::form::read_json(&req, payload).await?;
    let request = template_edit::save_request(&body)?;
    let view = state.farm.create_template(&caller.user, &request).await?;
    Ok(HttpResponse::Ok().json(TemplateJson::new(view, true, &state)))
}

/// Saves a new version of one of the caller's templates; new jobs render it. With
/// `base_version`, refused (409) when another save came after that version.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    request_body(content = crate::services::template_edit::TemplateBody, content_type = "application/json"),
    responses(
        (status = 200, body = TemplateJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Someone else's template"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Saved by someone else since base_version"),
    ),
    security(("bearer" = []))
)]
#[put("/generator/v1/templates/{id}")]
pub async fn save(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let id = ids::in_path(&id)?;
    let body: serde_json::Value = crate::form::read_json(&req, payload).await?;
    let request = template_edit::save_request(&body)?;
    let view = state.farm.save_template(&caller.user, &id, &request).await?;
    Ok(HttpResponse::Ok().json(TemplateJson::new(view, true, &state)))
}

/// A copy of a template the caller may use, owned by the caller.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    responses((status = 200, body = TemplateJson), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates/{id}/duplicate")]
pub async fn duplicate(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = state.farm.duplicate_template(&caller.user, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(TemplateJson::new(view, true, &state)))
}

/// Deletes one of the caller's templates: it is no longer listed or rendered by new jobs;
/// its jobs and their videos stay.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Someone else's template"),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[delete("/generator/v1/templates/{id}")]
pub async fn remove(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.farm.delete_template(&caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The saved versions of one of the caller's templates, newest first, without `json`.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id"), PageQuery),
    responses(
        (status = 200, body = Vec<TemplateVersionJson>),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Someone else's template"),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/generator/v1/templates/{id}/versions")]
pub async fn versions(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let id: TemplateId = ids::in_path(&id)?;
    let page = query.parse()?;
    let (current, versions) = state.farm.template_versions(&caller.user.id, &id, page.limit, page.offset()).await?;
    let out: Vec<TemplateVersionJson> =
        versions.into_iter().map(|v| TemplateVersionJson::new(v, current, false)).collect();
    Ok(HttpResponse::Ok().json(out))
}

/// One saved version of one of the caller's templates, with its document.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id"), ("version" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = TemplateVersionJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Someone else's template"),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/generator/v1/templates/{id}/versions/{version}")]
pub async fn version(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, number) = (ids::in_path(&path.0)?, version_number(&path.1)?);
    let (current, found) = state.farm.template_version(&caller.user.id, &id, number).await?;
    Ok(HttpResponse::Ok().json(TemplateVersionJson::new(found, current, true)))
}

/// Saves an old version again as the newest one: new jobs render it.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id"), ("version" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = TemplateJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Someone else's template"),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates/{id}/versions/{version}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, number) = (ids::in_path(&path.0)?, version_number(&path.1)?);
    let view = state.farm.restore_template(&caller.user, &id, number).await?;
    Ok(HttpResponse::Ok().json(TemplateJson::new(view, true, &state)))
}

/// A version number in a path: a positive integer (anything else names no version).
fn version_number(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().ok().filter(|n| *n >= 1).ok_or_else(|| ApiError::not_found("template version"))
}
