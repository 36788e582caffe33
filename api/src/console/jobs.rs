//! Jobs: the list with its filters, and a job's page with each video's live progress, its
//! player once done, a cancel button while it runs, and every notification delivery with
//! its attempts and a redeliver button.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse};
use askama::Template;
use reelfarm_domain::id::{DeliveryId, JobId, TemplateId};
use reelfarm_domain::status::{DeliveryStatus, JobStatus, RenderStatus};
use serde::Deserialize;

use super::pages::CsrfForm;
use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::error::ApiError;
use crate::ids;
use crate::pagination::Page;
use crate::routes::jobs::{JobJson, VideoJson};
use crate::routes::notifications::DeliveryJson;
use crate::services;
use crate::state::AppState;

/// Jobs per page of the list.
const JOBS_PER_PAGE: u32 = 25;

type Answer = Result<HttpResponse, ConsoleError>;

#[derive(Deserialize)]
pub struct JobsQuery {
    template: Option<String>,
    status: Option<String>,
    page: Option<u32>,
}

#[derive(Template)]
#[template(path = "console/jobs.html")]
struct JobsPage {
    chrome: Chrome,
    jobs: Vec<JobJson>,
    template: String,
    status: String,
    page: u32,
    more: bool,
}

impl JobsPage {
    /// The query of this list at page `page`.
    fn at(&self, page: u32) -> String {
        let query = [("template", self.template.as_str()), ("status", self.status.as_str())];
        let mut pairs: Vec<(&str, String)> =
            query.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (*k, v.to_string())).collect();
        pairs.push(("page", page.to_string()));
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

#[get("/jobs")]
pub async fn jobs_page(state: web::Data<AppState>, visitor: SignedIn, query: web::Query<JobsQuery>) -> Answer {
    let template = query.template.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let template_id = match template {
        Some(t) => Some(ids::in_path::<TemplateId>(t)?),
        None => None,
    };
    let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(JobStatus::parse(s).ok_or_else(|| ApiError::invalid_request(format!("unknown status {s:?}")))?),
        None => None,
    };
    let page = Page { limit: JOBS_PER_PAGE, page: query.page.unwrap_or(1).max(1) };
    let views =
        state.farm.list(&visitor.session.user.id, template_id.as_ref(), status, page.limit, page.offset()).await?;
    let jobs: Vec<JobJson> = views.iter().map(|v| JobJson::of(v, &state)).collect();
    Ok(html(
        StatusCode::OK,
        &JobsPage {
            chrome: visitor.chrome("jobs"),
            more: jobs.len() == JOBS_PER_PAGE as usize,
            jobs,
            template: template.unwrap_or_default().to_string(),
            status: status.map(|s| s.as_str().to_string()).unwrap_or_default(),
            page: page.page,
        },
    ))
}

/// A video as its card shows it: with its place in the job, for its polling address, and
/// the values it was asked with.
struct VideoCard {
    job_id: String,
    /// The job's output format: what shows the file (a player, a picture, a link).
    format: String,
    index: usize,
    video: VideoJson,
    values: String,
    /// What its sound measures, e.g. "-14.0 LUFS, true peak -1.6 dBTP".
    sound: Option<String>,
}

impl VideoCard {
    /// Still to come: the card polls for its next state.
    fn pending(&self) -> bool {
        !RenderStatus::parse(&self.video.status).is_some_and(RenderStatus::is_final)
    }
}

#[derive(Template)]
#[template(path = "console/job.html")]
struct JobPage {
    chrome: Chrome,
    job: JobJson,
    videos: Vec<VideoCard>,
    fragment: Deliveries,
    /// Only in a video's fragment (see [`VideoFragment`]).
    job_status: Option<String>,
}

#[derive(Template)]
#[template(path = "console/video.html")]
struct VideoFragment {
    card: VideoCard,
    /// The job's status, swapped into the page beside the card (it ends with the last
    /// video).
    job_status: Option<String>,
}

#[derive(Template)]
#[template(path = "console/deliveries.html")]
struct DeliveriesFragment {
    fragment: Deliveries,
}

/// A job's deliveries as its page shows them.
struct Deliveries {
    job_id: String,
    deliveries: Vec<DeliveryJson>,
    /// Whether more may come: the job runs, or a delivery is pending.
    live: bool,
    csrf: String,
}

/// The deliveries of a job, live while the job runs or one of them is pending.
async fn deliveries_of(state: &AppState, visitor: &SignedIn, job: &JobJson) -> Result<Deliveries, ConsoleError> {
    let id = ids::in_path::<JobId>(&job.id)?;
    let deliveries: Vec<DeliveryJson> =
        reelfarm_app::notifications::of_job(state.backends.store(), &visitor.session.user.id, &id)
            .await?
            .into_iter()
            .map(|(d, a)| DeliveryJson::new(d, a))
            .collect();
    let live = job.status == JobStatus::Started.as_str()
        || deliveries.iter().any(|d| d.status == DeliveryStatus::Pending.as_str());
    Ok(Deliveries { job_id: job.id.clone(), deliveries, live, csrf: visitor.session.csrf.clone() })
}

/// What a video's card shows beside its JSON: the values it was asked with (JSON) and
/// what its sound measures.
struct Extra {
    values: String,
    sound: Option<String>,
}

/// The caller's job `id` as its page shows it, with each video's [`Extra`].
async fn job_of(state: &AppState, visitor: &SignedIn, id: &str) -> Result<(JobJson, Vec<Extra>), ConsoleError> {
    let id = ids::in_path::<JobId>(id)?;
    let view = state.farm.get(&visitor.session.user.id, &id).await?;
    let extras = view
        .job
        .renders
        .iter()
        .map(|r| Extra {
            values: serde_json::to_string_pretty(&r.template_variables).expect("JSON objects serialize"),
            sound: r.sound_level.map(|l| format!("{:.1} LUFS, true peak {:.1} dBTP", l.loudness, l.true_peak)),
        })
        .collect();
    Ok((JobJson::of(&view, state), extras))
}

/// The cards of `job`'s videos (taken out of it).
fn cards(job: &mut JobJson, extras: Vec<Extra>) -> Vec<VideoCard> {
    let (job_id, format) = (job.id.clone(), job.format.clone());
    std::mem::take(&mut job.videos)
        .into_iter()
        .zip(extras)
        .enumerate()
        .map(|(index, (video, extra))| VideoCard {
            job_id: job_id.clone(),
            format: format.clone(),
            index,
            video,
            values: extra.values,
            sound: extra.sound,
        })
        .collect()
}

#[get("/jobs/{id}")]
pub async fn job_page(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let (mut job, values) = job_of(&state, &visitor, &id).await?;
    let fragment = deliveries_of(&state, &visitor, &job).await?;
    let videos = cards(&mut job, values);
    Ok(html(StatusCode::OK, &JobPage { chrome: visitor.chrome("jobs"), job, videos, fragment, job_status: None }))
}

/// One video's card (polled while it renders).
#[get("/jobs/{id}/videos/{index}")]
pub async fn video_card(state: web::Data<AppState>, visitor: SignedIn, path: web::Path<(String, usize)>) -> Answer {
    let (id, index) = path.into_inner();
    let (mut job, values) = job_of(&state, &visitor, &id).await?;
    let mut cards = cards(&mut job, values);
    if index >= cards.len() {
        return Err(ApiError::not_found("Video").into());
    }
    Ok(html(StatusCode::OK, &VideoFragment { card: cards.swap_remove(index), job_status: Some(job.status) }))
}

/// The job's deliveries (polled while more may come).
#[get("/jobs/{id}/notifications")]
pub async fn deliveries_fragment(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let (job, _) = job_of(&state, &visitor, &id).await?;
    Ok(html(StatusCode::OK, &DeliveriesFragment { fragment: deliveries_of(&state, &visitor, &job).await? }))
}

/// Cancels the job (as `POST /generator/v1/jobs/{id}/cancel`) and shows it again.
#[post("/jobs/{id}/cancel")]
pub async fn cancel(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let id = ids::in_path::<JobId>(&id)?;
    state.farm.cancel(&visitor.session.user.id, &id).await?;
    Ok(see_other(&format!("/console/jobs/{id}")))
}

#[post("/jobs/{id}/notifications/{delivery}/redeliver")]
pub async fn redeliver(
    state: web::Data<AppState>,
    visitor: SignedIn,
    path: web::Path<(String, String)>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let job_id = ids::in_path::<JobId>(&path.0)?;
    let id = ids::in_path::<DeliveryId>(&path.1)?;
    services::notifications::redeliver(&state, &visitor.caller(), &job_id, &id).await?;
    Ok(see_other(&format!("/console/jobs/{job_id}#deliveries")))
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::*;

    fn card(format: &str) -> String {
        let video = VideoJson {
            id: "r".into(),
            template_id: "t".into(),
            external_id: String::new(),
            status: "success".into(),
            url: format!("https://files.test/video.{format}"),
            error: String::new(),
            title: "Ad".into(),
            thumbnail: "https://files.test/thumb.jpg".into(),
            captions_url: Some("https://files.test/captions.vtt".into()),
            progress: 100,
            project_id: None,
            moov_id: None,
            metadata: serde_json::json!({}),
            created_at: String::new(),
            started_at: None,
            finished_at: None,
        };
        let sound = Some("-14.0 LUFS, true peak -1.6 dBTP".into());
        let card = VideoCard { job_id: "j".into(), format: format.into(), index: 0, video, values: "{}".into(), sound };
        VideoFragment { card, job_status: None }.render().unwrap()
    }

    #[test]
    fn each_format_is_shown_as_a_browser_can_show_it() {
        let webm = card("webm");
        assert!(webm.contains(r#"<video class="player""#) && webm.contains("Download WEBM"), "{webm}");
        assert!(webm.contains(r#"<a href="https://files.test/captions.vtt">Captions (WebVTT)</a>"#), "{webm}");
        assert!(webm.contains("Sound: -14.0 LUFS, true peak -1.6 dBTP"), "{webm}");
        let gif = card("gif");
        assert!(gif.contains(r#"<img class="player" src="https://files.test/video.gif""#), "{gif}");
        assert!(!gif.contains("<video"), "{gif}");
        let mov = card("mov");
        assert!(mov.contains(r#"src="https://files.test/thumb.jpg""#) && mov.contains("Download MOV"), "{mov}");
        assert!(!mov.contains("<video"), "{mov}");
    }
}
