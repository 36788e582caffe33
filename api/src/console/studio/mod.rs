//! The studio (issue #20): a template's owner edits it in the browser — a timeline of
//! clips and layers (drag to move and trim), a property panel for the selected template,
//! clip or layer (with the "make variable" switch and the requirements it gives), the
//! document as JSON with every problem at its line, undo and redo — with the frame at the
//! playhead drawn by a worker from the unsaved working copy, and saves every version.
//!
//! The working copy lives in the store (a revision per edit, see
//! [`reelfarm_backends::store::StudioSession`]), so a reload, a second tab or another api
//! replica continues where the user left off. Every edit is one request answered with the
//! editor again (htmx swaps it); the page keeps only the selection and the playhead.

mod edit;
mod view;

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_backends::store::{StudioSession, TemplateRecord};
use reelfarm_domain::asset::AssetKind;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::quality::Quality;
use serde_json::Value;

use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::ids;
use crate::services::template_edit::{self, SaveRequest};
use crate::services::{self, drafts, previews};
use crate::state::AppState;
use edit::{Form, Selection};

type Answer = Result<HttpResponse, ConsoleError>;

/// Library files offered as a layer's source.
const SOURCE_CHOICES: u32 = 200;

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
    timeline: view::Timeline,
    panel: view::Panel,
    json: Vec<view::JsonLine>,
    document: String,
    problems: usize,
    layer_kinds: &'static [&'static str],
    animation_kinds: &'static [&'static str],
}

impl Editor {
    /// Where its edits go.
    fn edit_url(&self) -> String {
        format!("/console/templates/{}/studio/edit", self.id)
    }
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

/// The caller's working copy of `record`: the one they left, or a new one from the current
/// version (also when theirs started from an older version and has no edits).
async fn working_copy(state: &AppState, caller: &Caller, record: &TemplateRecord) -> Result<StudioSession, ApiError> {
    let store = &state.backends.store;
    match store.studio_session(&record.id, &caller.user.id).await? {
        Some(session) if session.base_version == record.version || session.can_undo || session.can_redo => Ok(session),
        _ => Ok(store.open_studio_session(&record.id, &caller.user.id, record.version, &record.json).await?),
    }
}

/// The problems of `doc` as the owner's save would find them, by path in the document.
async fn problems_of(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    doc: &Value,
) -> Result<Vec<(String, String)>, ApiError> {
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

/// Library files a layer of `kind` may show.
async fn choices(state: &AppState, caller: &Caller, kind: &str) -> Result<Vec<(String, String)>, ApiError> {
    let kinds: &[AssetKind] = match kind {
        "image" => &[AssetKind::Sprite, AssetKind::Svg],
        "video" => &[AssetKind::Video],
        "sound" => &[AssetKind::Sound],
        _ => return Ok(Vec::new()),
    };
    let assets = services::assets::choosable(state, caller, kinds, SOURCE_CHOICES).await?;
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
    let problems = problems_of(state, caller, record, &doc).await?;
    let template = reelfarm_domain::template::Template::from_json(&session.json).ok();
    let kind = match &selection {
        Selection::Layer(id) => edit::find_layer(&doc, id)
            .and_then(|(c, l)| doc["clips"][c]["layers"][l].get("kind").and_then(Value::as_str))
            .unwrap_or_default(),
        _ => "",
    };
    let choices = choices(state, caller, kind).await?;
    let timeline = view::timeline(&doc, &selection, &problems);
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
        layer_kinds: edit::LAYER_KINDS,
        animation_kinds: edit::ANIMATIONS,
    })
}

#[get("/templates/{id}/studio")]
pub async fn studio(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    let record = template_edit::owned(&state, &caller, &id).await?;
    let session = working_copy(&state, &caller, &record).await?;
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

/// One edit of the working copy (or undo, redo, select, discard, save); answers the editor.
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
    let caller = visitor.caller();
    let form = Form(form.into_inner());
    let store = &state.backends.store;
    let mut record = template_edit::owned(&state, &caller, &id).await?;
    let mut session = working_copy(&state, &caller, &record).await?;
    let mut selection = Selection::parse(form.get("sel").unwrap_or_default());
    let mut notice = None;
    let mut typed = None;
    match form.get("op").unwrap_or_default() {
        "select" => selection = Selection::parse(form.get("select").unwrap_or_default()),
        "undo" => session = store.step_studio_session(&id, &caller.user.id, -1).await.map_err(ApiError::from)?,
        "redo" => session = store.step_studio_session(&id, &caller.user.id, 1).await.map_err(ApiError::from)?,
        "discard" => {
            session = store
                .open_studio_session(&id, &caller.user.id, record.version, &record.json)
                .await
                .map_err(ApiError::from)?;
            notice = Some((format!("Changes discarded: this is version {}.", record.version), false));
        }
        "save" => {
            let json = serde_json::from_str(&session.json).map_err(|e| ApiError::internal(&e))?;
            let request = SaveRequest { json, base_version: Some(session.base_version) };
            notice = Some(match template_edit::save(&state, &caller, &id, &request).await {
                Ok(saved) => {
                    store
                        .rebase_studio_session(&id, &caller.user.id, saved.record.version)
                        .await
                        .map_err(ApiError::from)?;
                    session.base_version = saved.record.version;
                    record = saved.record;
                    (format!("Saved version {}.", record.version), false)
                }
                Err(e) if !e.body().errors.is_empty() => {
                    ("Not saved: the document has the problems shown at their place.".to_string(), true)
                }
                Err(e) if e.key() == "error.conflict" => (format!("Not saved: {}", e.body().message), true),
                Err(e) => return Err(e.into()),
            });
        }
        op => {
            let mut doc: Value = serde_json::from_str(&session.json).map_err(|e| ApiError::internal(&e))?;
            let source = new_source(&state, &caller, &form, op).await?;
            let pick = |_: &str| source.clone();
            match edit::apply(&mut doc, op, &form, selection.clone(), &pick) {
                Ok(next) => {
                    selection = next;
                    let json = serde_json::to_string(&doc).expect("documents serialize");
                    if json != session.json {
                        session =
                            store.edit_studio_session(&id, &caller.user.id, &json).await.map_err(ApiError::from)?;
                    }
                }
                Err(message) => {
                    notice = Some((format!("Not changed: {message}"), true));
                    typed = form.get("document").map(str::to_string);
                }
            }
        }
    }
    let mut editor = editor(&state, &caller, &record, &session, selection, notice).await?;
    if let Some(typed) = typed {
        editor.document = typed;
    }
    Ok(html(StatusCode::OK, &EditorFragment { editor }))
}

/// The source a layer added by `op` starts with: the first library file of its kind, or
/// an address for the user to fill in.
async fn new_source(state: &AppState, caller: &Caller, form: &Form, op: &str) -> Result<Value, ApiError> {
    let first = match op {
        "add_layer" => choices(state, caller, form.get("kind").unwrap_or_default()).await?.into_iter().next(),
        _ => None,
    };
    Ok(match first {
        Some((id, _)) => serde_json::json!({ "asset": id }),
        None => serde_json::json!({ "url": "" }),
    })
}

#[derive(serde::Deserialize)]
pub struct FrameQuery {
    t: f64,
    /// A revision of the caller's working copy; without it, the saved version.
    rev: Option<i64>,
}

/// The frame at `t` seconds (the studio's `<img>`), at 480p: of a revision of the working
/// copy when `rev` is given (checked as a save would check it), else of the saved version.
#[get("/templates/{id}/studio/frame")]
pub async fn frame(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<FrameQuery>,
) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    let jpeg = match query.rev {
        None => {
            let request = previews::PreviewRequest { at: query.t, values: Default::default(), quality: Quality::P480 };
            previews::frame(&state, &caller, &id, request).await?
        }
        Some(rev) => {
            let record = template_edit::owned(&state, &caller, &id).await?;
            let json = state
                .backends
                .store
                .studio_revision(&id, &caller.user.id, rev)
                .await
                .map_err(ApiError::from)?
                .ok_or_else(|| ApiError::not_found("Revision"))?;
            let doc: Value = serde_json::from_str(&json).map_err(|e| ApiError::internal(&e))?;
            let checked = template_edit::check(&state, &caller, &doc, &record.files).await?;
            previews::frame_of_document(&state, &caller, &record, (&checked.0, checked.1), query.t, Quality::P480)
                .await?
        }
    };
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
    let request = SaveRequest { json: starter(), base_version: None };
    let view = template_edit::create(&state, &visitor.caller(), &request).await?;
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
    let job = drafts::create(&state, &visitor.caller(), &id, Default::default()).await?;
    Ok(see_other(&format!("/console/jobs/{}", job.id)))
}
