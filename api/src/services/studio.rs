//! The studio's working copies: what a template's owner is editing, kept by
//! the store as a line of revisions ([`StudioSession`]), with the problems a save would
//! find and the frames of any kept revision. Only the owner has one; every edit names the
//! revision it was made to, so a stale tab's edit is a conflict rather than a lost update.

use reelfarm_backends::store::{StudioSession, TemplateRecord};
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::quality::Quality;
use serde_json::Value;

use super::template_edit::{self, SaveRequest};
use super::{previews, Result};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;
use reelfarm_app::templates::TemplateView;

/// The caller's template `id` (404 or 403 unless they own it) and their working copy of
/// it: the one they left, or a new one from the current version (also when theirs started
/// from an older version and has no edits to keep).
pub async fn open(state: &AppState, caller: &Caller, id: &TemplateId) -> Result<(TemplateRecord, StudioSession)> {
    let record = template_edit::owned(state, caller, id).await?;
    let store = &state.backends.store;
    let session = match store.studio_session(&record.id, &caller.user.id).await? {
        Some(session) if session.base_version == record.version || session.can_undo || session.can_redo => session,
        _ => store.open_studio_session(&record.id, &caller.user.id, record.version, &record.json).await?,
    };
    Ok((record, session))
}

/// Records `doc` as the caller's next revision of template `record`, made to revision
/// `seen`: 409 when the copy changed since (another tab).
pub async fn edit(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    doc: &Value,
    seen: Option<i64>,
) -> Result<StudioSession> {
    let json = serde_json::to_string(doc).expect("documents serialize");
    Ok(state.backends.store.edit_studio_session(&record.id, &caller.user.id, &json, seen).await?)
}

/// Undo (`step` −1) or redo (+1) from revision `seen`.
pub async fn step(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    step: i64,
    seen: Option<i64>,
) -> Result<StudioSession> {
    Ok(state.backends.store.step_studio_session(&record.id, &caller.user.id, step, seen).await?)
}

/// Drops every change: the working copy starts again from the current version.
pub async fn discard(state: &AppState, caller: &Caller, record: &TemplateRecord) -> Result<StudioSession> {
    let store = &state.backends.store;
    Ok(store.open_studio_session(&record.id, &caller.user.id, record.version, &record.json).await?)
}

/// Saves `session` (the caller's working copy of `record`) as the next version, based on
/// the version it started from; later saves start from the new one.
pub async fn save(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    session: &StudioSession,
) -> Result<TemplateView> {
    let json = serde_json::from_str(&session.json).map_err(|e| ApiError::internal(&e))?;
    let request = SaveRequest { json, base_version: Some(session.base_version) };
    let saved = template_edit::save(state, caller, &record.id, &request).await?;
    state.backends.store.rebase_studio_session(&record.id, &caller.user.id, saved.record.version).await?;
    Ok(saved)
}

/// Restores version `version` of the caller's template `record` as its newest version
/// (checked again as a save), and starts the working copy again from it: the template
/// after it, and the new copy.
pub async fn restore(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    version: i64,
) -> Result<(TemplateRecord, StudioSession)> {
    let restored = template_edit::restore(state, caller, &record.id, version).await?.record;
    let session = discard(state, caller, &restored).await?;
    Ok((restored, session))
}

/// The newest `limit` versions of the caller's template `record`: number and when saved.
pub async fn versions(state: &AppState, record: &TemplateRecord, limit: u32) -> Result<Vec<(i64, i64)>> {
    let versions = state.backends.store.template_versions(&record.id, limit, 0).await?;
    Ok(versions.into_iter().map(|v| (v.version, v.created_at)).collect())
}

/// The problems a save of `doc` as the next version of `record` would report, by their
/// path in the document (`""` for the whole).
pub async fn problems(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    doc: &Value,
) -> Result<Vec<(String, String)>> {
    match template_edit::check(state, caller, doc, &record.files).await {
        Ok(_) => Ok(Vec::new()),
        Err(e) if !e.body().errors.is_empty() => Ok(e
            .body()
            .errors
            .iter()
            .map(|f| {
                let path = f.field.strip_prefix("json").unwrap_or(&f.field);
                (path.strip_prefix('.').unwrap_or(path).to_string(), f.message.clone())
            })
            .collect()),
        Err(e) => Err(e),
    }
}

/// The JPEG of the frame at `at` seconds of revision `rev` of the caller's working copy of
/// template `id`, at 480p — checked as a save would check it before a worker draws it.
pub async fn frame(state: &AppState, caller: &Caller, id: &TemplateId, rev: i64, at: f64) -> Result<Vec<u8>> {
    let record = template_edit::owned(state, caller, id).await?;
    let json = state
        .backends
        .store
        .studio_revision(&record.id, &caller.user.id, rev)
        .await?
        .ok_or_else(|| ApiError::not_found("Revision"))?;
    let doc: Value = serde_json::from_str(&json).map_err(|e| ApiError::internal(&e))?;
    let (template, json) = template_edit::check(state, caller, &doc, &record.files).await?;
    previews::frame_of_document(state, caller, &record, (&template, json), at, Quality::P480).await
}
