//! The studio (issue #20), first part: a template's owner edits its document with the
//! frame at the playhead beside it (scrubbing asks the preview service, the newest frame
//! wins), saves it as a new version (problems listed by their path in the document) and
//! plays a draft.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse};
use askama::Template;
use reelfarm_backends::store::TemplateRecord;
use reelfarm_domain::id::TemplateId;

use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::ids;
use crate::services::template_edit::{self, SaveRequest};
use crate::services::{drafts, previews};
use crate::state::AppState;

type Answer = Result<HttpResponse, ConsoleError>;

#[derive(Template)]
#[template(path = "console/studio.html")]
struct StudioPage {
    chrome: Chrome,
    id: String,
    name: String,
    version: i64,
    duration: f64,
    step: f64,
    document: String,
    /// Problems of the last save: the field (a path in the document) and what is wrong.
    problems: Vec<(String, String)>,
    saved: Option<i64>,
}

#[derive(serde::Deserialize)]
pub struct StudioQuery {
    saved: Option<i64>,
}

#[get("/templates/{id}/studio")]
pub async fn studio(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<StudioQuery>,
) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let record = template_edit::owned(&state, &visitor.caller(), &id).await?;
    let document = serde_json::from_str::<serde_json::Value>(&record.json)
        .and_then(|d| serde_json::to_string_pretty(&d))
        .unwrap_or_else(|_| record.json.clone());
    let page = page(&state, &visitor, &record, document, Vec::new(), query.saved)?;
    Ok(html(StatusCode::OK, &page))
}

/// The studio page of the caller's template `record` with `document` in the editor.
fn page(
    state: &AppState,
    visitor: &SignedIn,
    record: &TemplateRecord,
    document: String,
    problems: Vec<(String, String)>,
    saved: Option<i64>,
) -> Result<StudioPage, ConsoleError> {
    let fps = state.template_document(record).map_err(crate::error::ApiError::from)?.canvas.fps.max(1);
    Ok(StudioPage {
        chrome: visitor.chrome("templates"),
        id: record.id.to_string(),
        name: record.name.clone(),
        version: record.version,
        duration: record.duration_ms as f64 / 1000.0,
        step: 1.0 / f64::from(fps),
        document,
        problems,
        saved,
    })
}

#[derive(serde::Deserialize)]
pub struct SaveForm {
    csrf: String,
    document: String,
    base_version: i64,
}

#[post("/templates/{id}/studio")]
pub async fn save(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<SaveForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let id = ids::in_path::<TemplateId>(&id)?;
    let problems = match serde_json::from_str::<serde_json::Value>(&form.document) {
        Err(e) => vec![("json".to_string(), format!("not valid JSON: {e}"))],
        Ok(json) => {
            let request = SaveRequest { json, base_version: Some(form.base_version) };
            match template_edit::save(&state, &visitor.caller(), &id, &request).await {
                Ok(view) => {
                    return Ok(see_other(&format!("/console/templates/{id}/studio?saved={}", view.record.version)))
                }
                Err(e) if !e.body().errors.is_empty() => {
                    e.body().errors.iter().map(|f| (f.field.clone(), f.message.clone())).collect()
                }
                Err(e) if e.key() == "error.conflict" => vec![(String::new(), e.body().message.clone())],
                Err(e) => return Err(e.into()),
            }
        }
    };
    let record = template_edit::owned(&state, &visitor.caller(), &id).await?;
    let page = page(&state, &visitor, &record, form.document.clone(), problems, None)?;
    Ok(html(StatusCode::BAD_REQUEST, &page))
}

#[derive(serde::Deserialize)]
pub struct FrameQuery {
    t: f64,
}

/// The frame at `t` seconds (the studio's `<img>`), at 480p.
#[get("/templates/{id}/studio/frame")]
pub async fn frame(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<FrameQuery>,
) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let request = previews::PreviewRequest {
        at: query.t,
        values: Default::default(),
        quality: reelfarm_domain::quality::Quality::P480,
    };
    let jpeg = previews::frame(&state, &visitor.caller(), &id, request).await?;
    Ok(HttpResponse::Ok().content_type("image/jpeg").insert_header(("cache-control", "no-store")).body(jpeg))
}

#[derive(serde::Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// A template made from scratch: a 1280×720 canvas at 30 fps, one 5 s clip with a
/// backdrop and a title, ready to edit in the studio.
fn starter() -> serde_json::Value {
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

/// Plays a draft: makes it and opens its job's page, which follows it to its video.
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
