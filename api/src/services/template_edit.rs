//! Templates made and changed by their owner through the API (and the studio): create,
//! save (every save a new version), duplicate, delete (archive), versions and restore.
//!
//! A saved document is checked as an import is (shape, then every rule), each problem
//! named by its JSON path under `json`, and so are its sources: library assets the owner
//! may use, addresses the outbound policy does not refuse, and `file` sources only among
//! the placeholder files stored with the template (an import's). A worker renders the
//! thumb and preview of each saved version.

use reelfarm_domain::cost::Estimate;
use reelfarm_domain::error_key::ErrorKey;
use std::collections::BTreeMap;

use reelfarm_backends::store::{
    template_blob_prefix, NewTemplate, StoreError, TemplateContent, TemplateRecord, TemplateVersion,
};
use reelfarm_domain::id::{GroupId, TemplateId};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::{Source, Template};
use utoipa::openapi::{RefOr, Schema};

use reelfarm_app::jobs::asset_problem;
use reelfarm_app::templates::{self, TemplateView};

use super::Result;
use crate::auth::Caller;
use crate::body::{self, Sent};
use crate::error::{ApiError, FieldError};
use crate::pagination::Page;
use crate::state::AppState;

/// The largest version number a body may name (the largest integer JSON numbers keep).
pub const MAX_VERSION: i64 = (1 << 53) - 1;

/// The body of a create or save.
#[derive(Debug)]
pub struct SaveRequest {
    /// The template document (`docs/templates.md`).
    pub json: serde_json::Value,
    /// The version the edit started from: when another save came in between, the save is
    /// refused (409) instead of overwriting it.
    pub base_version: Option<i64>,
}

/// The body of a template's create or save as sent; its OpenAPI schema (`TemplateBody`)
/// is derived from it.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = TemplateBody)]
pub struct TemplateBody {
    #[serde(default)]
    #[schema(schema_with = template_document, required = true)]
    json: Sent,
    #[serde(default)]
    #[schema(schema_with = base_version, required = false)]
    base_version: Sent,
}

fn template_document() -> RefOr<Schema> {
    body::schema(serde_json::json!({ "type": "object", "description":
        "The template document (docs/templates.md): version, name, canvas, clips, …" }))
}

fn base_version() -> RefOr<Schema> {
    body::schema(serde_json::json!({ "type": ["integer", "null"], "minimum": 1, "maximum": MAX_VERSION,
        "description": "The version the edit started from; refused (409) when a later save exists" }))
}

/// Reads a create or save body; a missing or mistyped field names itself.
pub fn save_request(body: &serde_json::Value) -> Result<SaveRequest> {
    let invalid =
        |field: &str, key: ErrorKey, message: &str| ApiError::validation(vec![FieldError::new(field, key, message)]);
    let body: TemplateBody = body::read(body)?;
    let json = match body.json.get() {
        Some(document @ serde_json::Value::Object(_)) => {
            crate::nul::refuse_in_field(document, "json")?;
            document.clone()
        }
        None | Some(serde_json::Value::Null) => {
            return Err(invalid("json", ErrorKey::Required, "the template document is required"))
        }
        Some(_) => return Err(invalid("json", ErrorKey::Invalid, "must be the template document (an object)")),
    };
    let base_version = match body.base_version.get() {
        None | Some(serde_json::Value::Null) => None,
        // JSON Schema's integers include `3.0`.
        Some(n) => match n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_VERSION as f64) {
            Some(n) => Some(n as i64),
            _ => return Err(invalid("base_version", ErrorKey::Invalid, "must be a version number (1 or more)")),
        },
    };
    Ok(SaveRequest { json, base_version })
}

/// Creates a template owned by the caller from a document (version 1).
#[tracing::instrument(name = "template_edit::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(state: &AppState, caller: &Caller, request: &SaveRequest) -> Result<TemplateView> {
    let (template, json) = check(state, caller, &request.json, &BTreeMap::new()).await?;
    let content = content_of(&template, json, &BTreeMap::new());
    made(state, caller, content).await
}

/// Saves a new version of the caller's template `id` and makes it the current one.
#[tracing::instrument(name = "template_edit::save", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn save(state: &AppState, caller: &Caller, id: &TemplateId, request: &SaveRequest) -> Result<TemplateView> {
    let record = owned(state, caller, id).await?;
    let (template, json) = check(state, caller, &request.json, &record.files).await?;
    let content = content_of(&template, json, &record.files);
    saved(state, caller, id, &content, request.base_version).await
}

/// A copy of template `id` (any the caller may use, with its placeholder files) owned by
/// the caller, named "… (copy)", at version 1.
#[tracing::instrument(name = "template_edit::duplicate", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn duplicate(state: &AppState, caller: &Caller, id: &TemplateId) -> Result<TemplateView> {
    let original = state.backends.store.visible_template(id, &caller.user.id).await?;
    let document = state.template_document(&original)?;
    let problems = state.jobs.beyond_limits(&document, Quality::Default);
    if !problems.is_empty() {
        return Err(ApiError::validation(problems));
    }
    let mut json: serde_json::Value = serde_json::from_str(&original.json)
        .map_err(|e| StoreError::Corrupt(format!("template {id} document: {e}")))?;
    let name = format!("{} (copy)", original.name);
    json["name"] = serde_json::Value::String(name.clone());
    let content = TemplateContent {
        name,
        category: original.category.clone(),
        tags: original.tags.clone(),
        json: json.to_string(),
        duration_ms: original.duration_ms,
        quality: original.quality,
        files: original.files.clone(),
        media_cost_ms: Estimate::template_media(&document).cpu_ms(),
    };
    made(state, caller, content).await
}

/// Records `content` as a new template of the caller's (version 1; a worker makes its thumb
/// and preview).
async fn made(state: &AppState, caller: &Caller, content: TemplateContent) -> Result<TemplateView> {
    let id = TemplateId::generate();
    let new = NewTemplate {
        blob_prefix: template_blob_prefix(&id),
        id,
        name: content.name,
        owner_user_id: Some(caller.user.id.clone()),
        public: false,
        category: content.category,
        tags: content.tags,
        json: content.json,
        duration_ms: content.duration_ms,
        quality: content.quality,
        files: content.files,
        thumb_key: None,
        preview_key: None,
    };
    let record = state.backends.store.create_saved_template(&new, content.media_cost_ms).await?;
    Ok(templates::view(&state.backends, state.jobs.catalog(), &caller.user.id, record).await?)
}

/// Deletes the caller's template `id`: it is archived, so nobody lists it or makes jobs
/// of it any more, while its jobs and their videos stay.
#[tracing::instrument(name = "template_edit::delete", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn delete(state: &AppState, caller: &Caller, id: &TemplateId) -> Result<()> {
    owned(state, caller, id).await?;
    state.backends.store.archive_template(id).await?;
    state.forget_template(id);
    Ok(())
}

/// The current version number of the caller's template `id` and a page of its versions,
/// newest first.
#[tracing::instrument(name = "template_edit::versions", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn versions(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    page: Page,
) -> Result<(i64, Vec<TemplateVersion>)> {
    let current = owned(state, caller, id).await?.version;
    Ok((current, state.backends.store.template_versions(id, page.limit, page.offset()).await?))
}

/// The current version number of the caller's template `id` and its version `version`.
#[tracing::instrument(name = "template_edit::version", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn version(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    version: i64,
) -> Result<(i64, TemplateVersion)> {
    let current = owned(state, caller, id).await?.version;
    Ok((current, state.backends.store.template_version(id, version).await?))
}

/// Saves version `version` of the caller's template `id` again, as a new version: jobs
/// render it from now on.
#[tracing::instrument(name = "template_edit::restore", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn restore(state: &AppState, caller: &Caller, id: &TemplateId, version: i64) -> Result<TemplateView> {
    owned(state, caller, id).await?;
    let old = state.backends.store.template_version(id, version).await?;
    let document: serde_json::Value = serde_json::from_str(&old.json)
        .map_err(|e| StoreError::Corrupt(format!("template {id} version {version}: {e}")))?;
    // Checked as a save is: the rules, the caller's access to its assets and the outbound
    // policy may have changed since it was saved.
    let (template, json) = check(state, caller, &document, &old.files).await?;
    let content = content_of(&template, json, &old.files);
    saved(state, caller, id, &content, None).await
}

async fn saved(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    content: &TemplateContent,
    base: Option<i64>,
) -> Result<TemplateView> {
    let record = state.backends.store.save_template(id, content, &caller.user.id, base).await?;
    state.forget_template(id);
    Ok(templates::view(&state.backends, state.jobs.catalog(), &caller.user.id, record).await?)
}

/// Template `id` if the caller owns it: 404 when they cannot see it, 403 when they can
/// but it is someone else's (shared or public).
pub async fn owned(state: &AppState, caller: &Caller, id: &TemplateId) -> Result<TemplateRecord> {
    let record = state.backends.store.visible_template(id, &caller.user.id).await?;
    if record.owner_user_id.as_ref() != Some(&caller.user.id) {
        return Err(ApiError::forbidden("only the template's owner can change it; duplicate it to make your own"));
    }
    Ok(record)
}

/// What a save stores of `template`: its listing fields, and of `files` those it uses.
fn content_of(template: &Template, json: String, files: &BTreeMap<String, String>) -> TemplateContent {
    let used: BTreeMap<String, String> = template
        .sources_at()
        .into_iter()
        .filter_map(|(_, source, _)| match source {
            Source::File { file } => files.get_key_value(file).map(|(k, v)| (k.clone(), v.clone())),
            _ => None,
        })
        .collect();
    TemplateContent {
        name: template.name.clone(),
        category: template.category.clone(),
        tags: template.tags.clone(),
        json,
        duration_ms: (template.duration() * 1000.0).round() as i64,
        quality: Quality::of_canvas(template.canvas.width, template.canvas.height),
        files: used,
        media_cost_ms: Estimate::template_media(template).cpu_ms(),
    }
}

/// The document checked, and as text: every problem at once, each at its JSON path under
/// `json` (shape and rules first; the sources when those pass).
pub async fn check(
    state: &AppState,
    caller: &Caller,
    json: &serde_json::Value,
    files: &BTreeMap<String, String>,
) -> Result<(Template, String)> {
    let text = json.to_string();
    let template = Template::from_json(&text).map_err(|e| {
        let key = e.key();
        ApiError::validation(
            e.errors().into_iter().map(|p| FieldError::new(under_json(&p.path), key, p.message)).collect(),
        )
    })?;
    // What a render of it would ask of the farm, at the template's own size.
    let limits = state.config.render_limits.check(&template, Quality::Default, &|_| None);
    let mut problems: Vec<FieldError> = limits
        .err()
        .unwrap_or_default()
        .into_iter()
        .map(|p| FieldError::new(under_json(&p.path), ErrorKey::LimitExceeded, p.message))
        .collect();
    let mut groups: Option<Vec<GroupId>> = None;
    for (path, source, media) in template.sources_at() {
        let (field, problem) = match source {
            Source::File { file } if files.contains_key(file) => continue,
            Source::File { file } => (
                format!("{path}.file"),
                Some((
                    ErrorKey::UnknownFile,
                    format!("no file {file:?} is stored with this template; use a library asset or an address"),
                )),
            ),
            Source::Url { url } => (format!("{path}.url"), state.jobs.refused_address(url)),
            Source::Asset { asset } => {
                if groups.is_none() {
                    groups = Some(caller.group_ids(state).await?);
                }
                let groups = groups.as_deref().unwrap_or_default();
                (
                    format!("{path}.asset"),
                    asset_problem(&state.backends.store, &caller.user, groups, asset, media).await?,
                )
            }
        };
        if let Some((key, message)) = problem {
            problems.push(FieldError::new(under_json(&field), key, message));
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::validation(problems));
    }
    Ok((template, text))
}

/// A path in the document as a field of the request body.
fn under_json(path: &str) -> String {
    if path.is_empty() {
        "json".into()
    } else {
        format!("json.{path}")
    }
}
