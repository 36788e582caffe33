//! The studio: a template's owner edits it in the browser — a timeline of
//! clips and layers (drag to move and trim), a property panel for the selected template,
//! clip or layer (with the "make variable" switch and the requirements it gives), the
//! document as JSON with every problem at its line, undo and redo — with the frame at the
//! playhead drawn by a worker from the unsaved working copy, and saves every version.
//!
//! The working copy lives in the store (a revision per edit, [`services::studio`]), so a
//! reload or another api replica continues where the user left off. Every edit is one
//! request, naming the revision it was made to, answered with the editor again (htmx
//! sends them one after the other and morphs the answers in); the page keeps only the
//! selection and the playhead.

use reelfarm_domain::error_key::ErrorKey;
mod edit;
mod fields;
mod timeline;
mod view;

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_domain::asset::AssetKind;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::stored::{StudioSession, TemplateRecord};
use serde_json::Value;

use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::ids;
use crate::services::{self, drafts};
use crate::state::AppState;
use edit::{Edit, Form, Selection};
use fields::{animation_kinds, layer_kinds};
use reelfarm_app::template_edit::SaveTemplate;

type Answer = Result<HttpResponse, ConsoleError>;

/// Library files offered as a layer's source.
const SOURCE_CHOICES: u32 = 200;
/// Versions listed (newest first) for restoring.
const VERSIONS_SHOWN: u32 = 10;

/// Everything the editor shows of a working copy.
struct Editor {
    id: String,
    rev: i64,
    /// Changes with every edit, undo and redo: the frame's address changes with it.
    stamp: i64,
    current_version: i64,
    duration: f64,
    step: f64,
    can_undo: bool,
    can_redo: bool,
    selection: String,
    notice: Option<String>,
    alert: bool,
    /// The working copy differs from the version it started from.
    changed: bool,
    timeline: timeline::Timeline,
    panel: view::Panel,
    json: Vec<view::JsonLine>,
    document: String,
    problems: usize,
    layer_kinds: &'static [&'static str],
    animation_kinds: &'static [&'static str],
    /// The newest versions: number and when saved (ISO 8601).
    versions: Vec<(i64, String)>,
}

#[derive(Template)]
#[template(path = "console/studio.html")]
struct StudioPage {
    chrome: Chrome,
    name: String,
    id: String,
    rev: i64,
    stamp: i64,
    duration: f64,
    step: f64,
    /// The editor, as its fragment renders it.
    editor: String,
}

#[derive(Template)]
#[template(path = "console/studio_editor.html")]
struct EditorFragment {
    editor: Editor,
}

/// Library files a layer of `kind` may show.
async fn choices(state: &AppState, caller: &Caller, kind: &str) -> Result<Vec<(String, String)>, ApiError> {
    let kinds: &[AssetKind] = match kind {
        "image" => &[AssetKind::Sprite, AssetKind::Svg],
        "video" => &[AssetKind::Video],
        "sound" => &[AssetKind::Sound],
        "lottie" => &[AssetKind::Lottie],
        _ => return Ok(Vec::new()),
    };
    let assets =
        reelfarm_app::assets::choosable(state.backends.store(), &caller.user.id, kinds, SOURCE_CHOICES).await?;
    Ok(assets.into_iter().map(|a| (a.id.to_string(), a.label)).collect())
}

/// The editor of `session` with `selection` in the panel.
async fn editor(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    session: &StudioSession,
    selection: Selection,
    notice: Option<(String, bool)>,
) -> Result<Editor, ApiError> {
    let doc: Value = serde_json::from_str(&session.json).unwrap_or(Value::Null);
    let problems = state.farm.studio_problems(&caller.user, record, &doc).await?;
    let template = reelfarm_domain::template::Template::from_json(&session.json).ok();
    let kind = match &selection {
        Selection::Layer(id) => edit::find_layer(&doc, id)
            .and_then(|(c, l)| doc["clips"][c]["layers"][l].get("kind").and_then(Value::as_str))
            .unwrap_or_default(),
        _ => "",
    };
    let choices = choices(state, caller, kind).await?;
    let timeline = timeline::timeline(&doc, &selection, &problems);
    let fps = edit::get(&doc, "canvas.fps").and_then(Value::as_f64).filter(|f| *f >= 1.0).unwrap_or(30.0);
    let saved: Option<Value> = serde_json::from_str(&record.json).ok();
    let (notice, alert) = match notice {
        Some((text, alert)) => (Some(text), alert),
        None if session.base_version != record.version => (
            Some(format!(
                "These changes started from version {}; version {} has been saved since, so saving them \
                 is refused. Discard them to edit version {}.",
                session.base_version, record.version, record.version
            )),
            true,
        ),
        None => (None, false),
    };
    Ok(Editor {
        id: record.id.to_string(),
        rev: session.rev,
        stamp: session.updated_at,
        current_version: record.version,
        duration: timeline.duration,
        step: 1.0 / fps,
        can_undo: session.can_undo,
        can_redo: session.can_redo,
        selection: selection.key(),
        notice,
        alert,
        changed: saved.as_ref() != Some(&doc) || session.base_version != record.version,
        panel: view::panel(&doc, &selection, template.as_ref(), &problems, &choices),
        json: view::listing(&doc, &problems),
        document: view::pretty(&doc),
        problems: problems.len(),
        timeline,
        layer_kinds: layer_kinds(),
        animation_kinds: animation_kinds(),
        versions: state
            .farm
            .studio_versions(record, VERSIONS_SHOWN)
            .await?
            .into_iter()
            .map(|(n, at)| (n, reelfarm_domain::id::iso8601(at)[..16].replace('T', " ")))
            .collect(),
    })
}

#[get("/templates/{id}/studio")]
pub async fn studio(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    let (record, session) = state.farm.open_studio(&caller.user, &id).await?;
    let editor = editor(&state, &caller, &record, &session, Selection::Template, None).await?;
    let page = StudioPage {
        chrome: visitor.chrome("templates"),
        name: record.name.clone(),
        id: editor.id.clone(),
        rev: editor.rev,
        stamp: editor.stamp,
        duration: editor.duration,
        step: editor.step,
        editor: EditorFragment { editor }.render().map_err(|e| ApiError::internal(&e))?,
    };
    Ok(html(StatusCode::OK, &page))
}

/// One edit of the working copy (or undo, redo, select, discard, save), made to the
/// revision the form names (`rev`); answers the editor.
#[post("/templates/{id}/studio/edit")]
pub async fn edit_document(
    state: web::Data<AppState>,
    visitor: SignedIn,
    req: HttpRequest,
    id: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Answer {
    visitor.check_csrf_header(&req)?;
    let id = ids::in_path::<TemplateId>(&id)?;
    let editor = edited(&state, &visitor.caller(), &id, &Form(form.into_inner())).await?;
    Ok(html(StatusCode::OK, &EditorFragment { editor }))
}

/// Applies the edit `form` asks for to the caller's working copy of template `id`; the
/// editor after it.
async fn edited(state: &AppState, caller: &Caller, id: &TemplateId, form: &Form) -> Result<Editor, ApiError> {
    let seen = form.get("rev").and_then(|r| r.parse::<i64>().ok());
    let (mut record, mut session) = state.farm.open_studio(&caller.user, id).await?;
    let mut selection = Selection::parse(form.get("sel").unwrap_or_default());
    let mut typed = None;
    let changed = match form.get("op").unwrap_or_default() {
        "select" => {
            selection = Selection::parse(form.get("select").unwrap_or_default());
            Ok(None)
        }
        "undo" => state
            .farm
            .step_studio(&caller.user, &record, -1, seen)
            .await
            .map_err(ApiError::from)
            .map(|s| (s, None))
            .map(Some),
        "redo" => state
            .farm
            .step_studio(&caller.user, &record, 1, seen)
            .await
            .map_err(ApiError::from)
            .map(|s| (s, None))
            .map(Some),
        "discard" => state
            .farm
            .discard_studio(&caller.user, &record)
            .await
            .map_err(ApiError::from)
            .map(|s| Some((s, Some((format!("Changes discarded: this is version {}.", record.version), false))))),
        "restore" => match form.get("version").and_then(|v| v.parse::<i64>().ok()) {
            Some(version) => {
                state.farm.restore_studio(&caller.user, &record, version).await.map_err(ApiError::from).map(
                    |(restored, s)| {
                        record = restored;
                        let notice = format!("Restored version {version} as version {}.", record.version);
                        Some((s, Some((notice, false))))
                    },
                )
            }
            None => Err(ApiError::invalid_request("version must be a version number")),
        },
        "save" if seen.is_some_and(|seen| seen != session.rev) => Err(ApiError::conflict(STALE)),
        "save" => match state.farm.save_studio(&caller.user, &record, &session).await.map_err(ApiError::from) {
            Ok(saved) => {
                record = saved.record;
                session.base_version = record.version;
                Ok(Some((session.clone(), Some((format!("Saved version {}.", record.version), false)))))
            }
            Err(e) if !e.body().errors.is_empty() => {
                let notice = "Not saved: the document has the problems shown at their place.";
                Ok(Some((session.clone(), Some((notice.to_string(), true)))))
            }
            // A version saved since the working copy started (elsewhere).
            Err(e) if e.key() == ErrorKey::Conflict => {
                Ok(Some((session.clone(), Some((format!("Not saved: {}", e.body().message), true)))))
            }
            Err(e) => Err(e),
        },
        op => {
            let mut doc: Value = serde_json::from_str(&session.json).map_err(|e| ApiError::internal(&e))?;
            let parsed = Edit::parse(op, form);
            let source = match &parsed {
                Ok(Edit::AddLayer { kind, .. }) => new_source(state, caller, kind).await?,
                _ => Value::Null,
            };
            match parsed.and_then(|edit| edit::apply(&mut doc, &edit, form, selection.clone(), &source)) {
                Ok(next) => {
                    selection = next;
                    if serde_json::from_str::<Value>(&session.json).is_ok_and(|old| old == doc) {
                        Ok(None)
                    } else {
                        state
                            .farm
                            .edit_studio(&caller.user, &record, &doc, seen)
                            .await
                            .map_err(ApiError::from)
                            .map(|s| Some((s, None)))
                    }
                }
                Err(message) => {
                    typed = form.get("document").map(str::to_string);
                    Ok(Some((session.clone(), Some((format!("Not changed: {message}"), true)))))
                }
            }
        }
    };
    let notice = match changed {
        Ok(Some((next, notice))) => {
            session = next;
            notice
        }
        Ok(None) => None,
        // Another tab moved the working copy on: show it as it is now.
        Err(e) if e.key() == ErrorKey::Conflict => {
            session = state.farm.open_studio(&caller.user, id).await?.1;
            Some((format!("Not changed: {} Here it is as it is now; make the change again.", e.body().message), true))
        }
        Err(e) => return Err(e),
    };
    let mut editor = editor(state, caller, &record, &session, selection, notice).await?;
    if let Some(typed) = typed {
        editor.document = typed;
    }
    Ok(editor)
}

/// What a stale save hears.
const STALE: &str = "the working copy was changed elsewhere (another tab or window).";

/// The source a layer of `kind` starts with: the first library file of its kind, or an
/// address for the user to fill in.
async fn new_source(state: &AppState, caller: &Caller, kind: &str) -> Result<Value, ApiError> {
    Ok(match choices(state, caller, kind).await?.into_iter().next() {
        Some((id, _)) => serde_json::json!({ "asset": id }),
        None => serde_json::json!({ "url": "" }),
    })
}

#[derive(serde::Deserialize)]
pub struct FrameQuery {
    t: f64,
    /// A revision of the caller's working copy.
    rev: i64,
}

/// The frame at `t` seconds of revision `rev` of the working copy (the studio's `<img>`),
/// at 480p.
#[get("/templates/{id}/studio/frame")]
pub async fn frame(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<FrameQuery>,
) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let jpeg = services::studio::frame(&state, &visitor.caller(), &id, query.rev, query.t).await?;
    Ok(HttpResponse::Ok().content_type("image/jpeg").insert_header(("cache-control", "no-store")).body(jpeg))
}

#[derive(serde::Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// A template made from scratch: a 1280×720 canvas at 30 fps, one 5 s clip with a
/// backdrop and a title, ready to edit in the studio.
fn starter() -> Value {
    serde_json::json!({
        "version": 1,
        "name": "Untitled",
        "canvas": { "width": 1280, "height": 720, "fps": 30, "background": "#101820" },
        "clips": [{
            "id": "scene-1",
            "duration": 5,
            "layers": [
                { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 1280, "height": 720, "color": "#1f3a5f" },
                { "id": "title", "kind": "text", "x": 80, "y": 300, "width": 1120, "height": 120,
                  "text": "Your title", "font": { "family": "Liberation Sans", "size": 80, "color": "#ffffff" },
                  "align": "center", "vertical_align": "middle" }
            ]
        }]
    })
}

/// Makes a template from scratch for the caller and opens it in the studio.
#[post("/templates/new")]
pub async fn new_template(state: web::Data<AppState>, visitor: SignedIn, form: web::Form<CsrfForm>) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let request = SaveTemplate { json: starter(), base_version: None };
    let view = state.farm.create_template(&visitor.session.user, &request).await?;
    Ok(see_other(&format!("/console/templates/{}/studio", view.record.id)))
}

/// Plays a draft of the saved version: makes it and opens its job's page, which follows
/// it to its video.
#[post("/templates/{id}/studio/draft")]
pub async fn draft(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    state.farm.owned_template(&caller.user.id, &id).await?;
    let job = drafts::create(&state, &caller, &id, Default::default()).await?;
    Ok(see_other(&format!("/console/jobs/{}", job.id)))
}
