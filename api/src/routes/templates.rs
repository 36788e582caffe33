//! Templates (spec §2.5, §2.6, §4.5, §4.6): the ones the caller may use, and one in full;
//! and, as additions, a frame or a draft of one, and the fonts a template may name. Making
//! and changing templates is in `template_edit`.

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use reelfarm_domain::id::UserId;
use reelfarm_domain::template::stored::ShareTarget;
use reelfarm_domain::template::TemplateVariable;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids;
use crate::pagination::PageQuery;
use crate::services;
use crate::state::AppState;
use reelfarm_app::templates::TemplateView;

/// `owner` and `created_by` of a public template imported without an owner.
pub const OPERATOR: &str = "operator";

/// A template (spec §2.5). In lists, `json` is left out.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateJson {
    pub id: String,
    pub name: String,
    /// Length of the video in seconds.
    pub duration: f64,
    /// Absolute address of a JPEG still of the template with its default content.
    pub thumb: String,
    /// Absolute address of a low-resolution (480p) MP4 of the template with its defaults.
    pub preview: String,
    /// The template's id (templates are not made from projects here).
    pub original_moov_id: String,
    /// The template's id.
    pub original_project_id: String,
    pub public: bool,
    pub category: String,
    pub tags: Vec<String>,
    /// The replaceable fields; `id` and `type` are what a job needs.
    pub variables: Vec<VariableJson>,
    /// The clips (scenes) in playing order.
    pub clips: Vec<ClipJson>,
    pub archived: bool,
    /// Id of the user who imported it for, or `operator`.
    pub created_by: String,
    pub created_at: String,
    /// Whether the template has variables (can be filled in by a job).
    pub quick_editable: bool,
    /// Always true: jobs render the current version of the template.
    pub allow_updates: bool,
    /// Always 0: no premium assets are charged.
    pub premium_assets_price: u32,
    /// Users and groups the template is shared with; shown to its owner only.
    pub shares: Vec<ShareJson>,
    /// Id of the owning user, or `operator`.
    pub owner: String,
    /// Always false.
    pub has_comments: bool,
    /// The qualities the template renders in at full sharpness: every one up to its
    /// native size (the canvas's shorter side), e.g. `["480p", "720p", "1080p"]`. A job
    /// may ask for a higher one; raster media are then upscaled.
    pub quality: Vec<String>,
    /// The current version (an addition): 1 when made, one more with every save.
    pub version: i64,
    /// The template document (see `docs/templates.md`); in `GET …/templates/{id}` and the
    /// answers of the calls that change a template, not in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub json: Option<serde_json::Value>,
}

/// A template variable (spec §2.6).
#[derive(Debug, Serialize, ToSchema)]
pub struct VariableJson {
    /// Key of the value in a job's `template_variables` (a UUID).
    pub id: String,
    pub name: String,
    pub weight: f64,
    /// `text`, `image`, `video` or `sound`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What a value holds beyond its type, where the type does not say it all: `captions`
    /// for a text variable whose value is the text of an SRT or WebVTT file (or its
    /// address, or an array of `{start, end, text}` cues). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// text: `multiline`, `minimum_length`, `maximum_length`; image: `width`, `height`
    /// (pixels); video: `width`, `height`, `duration` (seconds); sound: `duration`.
    #[schema(value_type = Object)]
    pub requirements: serde_json::Value,
    /// Placeholder content: text as HTML paragraphs, media as an absolute file address.
    pub default: String,
    /// Id of the clip that holds the variable.
    pub clip_id: String,
}

/// One clip (scene) of a template.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClipJson {
    pub id: String,
    /// When the clip starts in the video, in seconds.
    pub start: f64,
    /// Length of the clip in seconds, including the overlap of its transitions.
    pub duration: f64,
    /// Ids of the clip's variables, in layer order.
    pub variables: Vec<String>,
}

/// Someone a template is shared with.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShareJson {
    /// Id of the user or group.
    pub id: String,
    /// `user` or `group`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Same as `id`.
    pub guid: String,
}

fn variable_json(v: TemplateVariable) -> VariableJson {
    VariableJson {
        id: v.id.to_string(),
        name: v.name,
        weight: v.weight,
        kind: v.kind.spec_type().to_string(),
        format: v.kind.format().map(str::to_string),
        requirements: serde_json::to_value(&v.requirements).unwrap_or_default(),
        default: v.default,
        clip_id: v.clip_id,
    }
}

impl TemplateJson {
    pub(crate) fn new(view: TemplateView, with_json: bool, state: &AppState) -> TemplateJson {
        let blobs = state.backends.blobs();
        let variables: Vec<VariableJson> = view.variables(blobs).into_iter().map(variable_json).collect();
        let TemplateView { record, document: template, shares, .. } = view;
        let clips = template
            .clips
            .iter()
            .zip(template.clip_starts())
            .map(|(clip, start)| ClipJson {
                id: clip.id.clone(),
                start,
                duration: clip.duration,
                variables: variables.iter().filter(|v| v.clip_id == clip.id).map(|v| v.id.clone()).collect(),
            })
            .collect();
        let owner = record.owner_user_id.as_ref().map_or_else(|| OPERATOR.to_string(), UserId::to_string);
        let address = |key: &Option<String>| key.as_deref().map(|k| blobs.public_url(k));
        TemplateJson {
            id: record.id.to_string(),
            name: record.name.clone(),
            duration: record.duration_ms as f64 / 1000.0,
            thumb: address(&record.thumb_key).unwrap_or_else(|| state.static_url("library.svg")),
            preview: address(&record.preview_key).unwrap_or_default(),
            original_moov_id: record.id.to_string(),
            original_project_id: record.id.to_string(),
            public: record.public,
            category: record.category.clone(),
            tags: record.tags.clone(),
            quick_editable: !variables.is_empty(),
            variables,
            clips,
            archived: record.archived,
            created_by: owner.clone(),
            created_at: reelfarm_domain::id::iso8601(record.created_at),
            allow_updates: true,
            premium_assets_price: 0,
            shares: shares
                .into_iter()
                .map(|s| {
                    let (kind, id) = match s {
                        ShareTarget::User(id) => ("user", id.to_string()),
                        ShareTarget::Group(id) => ("group", id.to_string()),
                    };
                    ShareJson { guid: id.clone(), id, kind: kind.into() }
                })
                .collect(),
            owner,
            has_comments: false,
            quality: record.quality.up_to().map(|q| q.as_str().to_string()).collect(),
            version: record.version,
            json: with_json.then(|| serde_json::from_str(&record.json).unwrap_or_default()),
        }
    }
}

/// The templates the caller may use (own, shared with them or their groups, public),
/// newest first, without `json`.
#[utoipa::path(
    tag = "templates",
    params(PageQuery),
    responses(
        (status = 200, body = Vec<TemplateJson>),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/generator/v1/templates")]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.parse()?;
    let views = state.farm.templates(&caller.user.id, page.limit, page.offset()).await?;
    let out: Vec<TemplateJson> = views.into_iter().map(|view| TemplateJson::new(view, false, &state)).collect();
    Ok(HttpResponse::Ok().json(out))
}

/// One template with its variables and its document (`json`).
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    responses(
        (status = 200, body = TemplateJson),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/generator/v1/templates/{id}")]
pub async fn get(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let view = state.farm.template(&caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(TemplateJson::new(view, true, &state)))
}

/// The frame of a template (its current version) at `t` seconds with `values` applied, as
/// a JPEG: what a render shows at that time, drawn by the renderer's own compositor. Free.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    request_body(content = crate::services::previews::PreviewBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The frame", content_type = "image/jpeg"),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 429, body = ErrorBody,
            description = "Past the account's preview budget (REELFARM_PREVIEW_FRAMES a minute, 30 at once); see Retry-After"),
        (status = 503, body = ErrorBody, description = "No worker answered in time"),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates/{id}/preview")]
pub async fn preview(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let id = ids::in_path(&id)?;
    let body: serde_json::Value = crate::form::read_json(&req, payload).await?;
    let request = services::previews::preview_request(&body)?;
    let jpeg = services::previews::frame(&state, &caller, &id, request).await?;
    Ok(HttpResponse::Ok().content_type("image/jpeg").insert_header(("cache-control", "no-store")).body(jpeg))
}

/// Starts a draft of a template (its current version) with `values`: a fast render at
/// 480p (or the template's size when smaller) and at most 15 fps, free, polled at
/// `GET /generator/v1/jobs/{id}` like any job, not listed with the jobs, and deleted with
/// its video a day later. Free, within the account's draft budget.
#[utoipa::path(
    tag = "templates",
    params(("id" = String, Path, description = "Template id")),
    request_body(content = crate::services::drafts::DraftBody, content_type = "application/json"),
    responses(
        (status = 200, body = super::jobs::JobJson),
        (status = 400, body = ErrorBody, description = "Bad values, or a draft longer than the whole draft budget"),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 429, body = ErrorBody,
            description = "Past the account's draft budget (REELFARM_DRAFT_MINUTES of video an hour); Retry-After says \
                           when enough of the hour's drafts have aged out"),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates/{id}/draft")]
pub async fn draft(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let id = ids::in_path(&id)?;
    let body: serde_json::Value = crate::form::read_json(&req, payload).await?;
    let values = services::drafts::draft_values(&body)?;
    let job = services::drafts::create(&state, &caller, &id, values).await?;
    Ok(HttpResponse::Ok().json(super::jobs::JobJson::new(&job, &Default::default(), &state)))
}

/// A font family a template may name (an addition).
#[derive(Debug, Serialize, ToSchema)]
pub struct FontJson {
    /// The name to use as `font.family`, matched exactly.
    pub family: String,
    /// The faces the renderer has: `<b>` and `<i>` markup choose among them.
    pub styles: Vec<String>,
}

/// The font families the renderer draws with: a template naming any other is refused (the
/// error names the field), never drawn with a substitute.
#[utoipa::path(
    tag = "templates",
    responses((status = 200, body = Vec<FontJson>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/fonts")]
pub async fn fonts(_caller: Caller) -> Result<HttpResponse, ApiError> {
    let styles = services::templates::FONT_STYLES.map(String::from).to_vec();
    let out: Vec<FontJson> = services::templates::fonts()
        .iter()
        .map(|family| FontJson { family: family.to_string(), styles: styles.clone() })
        .collect();
    Ok(HttpResponse::Ok().json(out))
}
