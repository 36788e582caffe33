//! The spreadsheet form of a template page: a CSV file, picked, dropped or pasted, shown
//! as the first rows it will render, then sent as one job of a video per row through the
//! job service (`services::jobs::create_from_csv`), whose problems are listed by row and
//! column.

use actix_web::http::StatusCode;
use actix_web::{post, web, HttpRequest, ResponseError};
use reelfarm_domain::id::TemplateId;
use serde_json::{json, Map, Value};

use super::render_form::Fields;
use super::templates::{template_form, Answer, SENT_ALREADY};
use super::visitor::SignedIn;
use super::{html, see_other, ConsoleError};
use crate::auth::Caller;
use crate::ids;
use crate::services::jobs::batch::Sheet;
use crate::services::jobs::{self, Created};
use crate::state::AppState;

/// Rows the preview shows.
const PREVIEW_ROWS: usize = 5;

/// The spreadsheet form as last sent.
#[derive(Default)]
pub struct BatchForm {
    /// The file's text.
    pub csv: String,
    pub quality: String,
    pub format: String,
    /// The first rows as they will be rendered, once the file reads well.
    pub preview: Option<Preview>,
    /// What keeps the file from being a job: `field: message`.
    pub problems: Vec<String>,
    /// The idempotency key of the sending: sending it twice makes one job.
    pub attempt: String,
}

/// The first rows of a file under its header.
pub struct Preview {
    pub header: Vec<String>,
    /// Each row's number in the file (the header's is 1) and its cells.
    pub rows: Vec<(usize, Vec<String>)>,
    /// Rows in the file: the videos it makes.
    pub total: usize,
}

/// Shows the file's first rows (`step=preview`) or sends it as a job (`step=send`): the
/// job's page then, else the template page again with the problems.
#[post("/templates/{id}/batch")]
pub async fn batch(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Answer {
    // Read whole within the API's body limit: a file of many rows is larger than a form.
    let form = Fields(crate::form::read::<Vec<(String, String)>>(&req, payload).await?);
    visitor.check_csrf(form.get("csrf").unwrap_or_default())?;
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    let field = |name: &str| form.get(name).unwrap_or_default().to_string();
    let mut sent = BatchForm {
        csv: form.0.iter().find(|(k, _)| k == "csv").map(|(_, v)| v.clone()).unwrap_or_default(),
        quality: field("quality"),
        format: field("format"),
        attempt: form.get("attempt").map_or_else(|| reelfarm_domain::token::random_base62(24), str::to_string),
        ..BatchForm::default()
    };
    if form.get("step") == Some("send") {
        if let Some(job) = send(&state, &caller, &id, &mut sent).await? {
            return Ok(see_other(&format!("/console/jobs/{job}")));
        }
    } else {
        let template = state.farm.template(&caller.user.id, &id).await?;
        match Sheet::read(sent.csv.as_bytes(), &template.variables(state.backends.blobs())) {
            Ok(sheet) => {
                let (header, rows) = sheet.head(PREVIEW_ROWS);
                sent.preview = Some(Preview { header, rows, total: sheet.len() });
            }
            Err(errors) => sent.problems = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect(),
        }
    }
    let status = if sent.problems.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    let mut page = template_form(&state, &visitor, &id, Fields(Vec::new()), Default::default()).await?;
    page.batch = sent;
    Ok(html(status, &page))
}

/// Sends `sent` as a job: its id, or `None` with the problems in `sent`.
async fn send(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    sent: &mut BatchForm,
) -> Result<Option<String>, ConsoleError> {
    let mut options = Map::new();
    for (name, given) in [("quality", &sent.quality), ("format", &sent.format)] {
        if !given.is_empty() {
            options.insert(name.into(), json!(given));
        }
    }
    let request = Map::from_iter([("options".to_string(), Value::Object(options))]);
    let respond = |job: &reelfarm_domain::job::JobRecord| job.id.to_string();
    let key = Some(sent.attempt.as_str());
    let problems = match jobs::create_from_csv(state, caller, id, sent.csv.as_bytes(), request, key, respond).await {
        Ok(Created::New(job) | Created::Replayed(job)) => return Ok(Some(job)),
        // The form never asks for a dry run.
        Ok(Created::Quote(_)) => vec!["Nothing was sent; send the file again".into()],
        Err(e) if e.status_code() == StatusCode::CONFLICT => vec![SENT_ALREADY.into()],
        Err(e) if !e.body().errors.is_empty() => {
            e.body().errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
        }
        Err(e) if e.status_code().is_client_error() => vec![e.body().message.clone()],
        Err(e) => return Err(e.into()),
    };
    sent.problems = problems;
    Ok(None)
}
