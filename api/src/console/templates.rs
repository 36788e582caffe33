//! Templates: the list, one template with its variables, and its render form, which
//! creates a job through the job service.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse, ResponseError};
use askama::Template;
use reelfarm_domain::asset::AssetKind;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::{rich, Requirements, TemplateVariable, VariableType};

use super::batch::BatchForm;
use super::render_form::{self, Fields, Problems};
use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::auth::Caller;
use crate::ids;
use crate::pagination::Page;
use crate::services::jobs::Created;
use crate::services::{self, tts::ProviderVoices};
use crate::state::AppState;
use reelfarm_app::templates::TemplateView;

/// Templates per page of the list.
const TEMPLATES_PER_PAGE: u32 = 24;
/// Library files a media input offers (the newest; an address reaches any other).
const CHOICES: u32 = 200;

/// What a form sent again after it was changed hears (its idempotency key made a job
/// from the first sending).
pub(super) const SENT_ALREADY: &str = "This form made a video already; open the template again to make another";

pub(super) type Answer = Result<HttpResponse, ConsoleError>;

/// A problem of the form as a whole.
fn problem(message: &str) -> Problems {
    Problems::from([(String::new(), message.to_string())])
}

/// A template as the list shows it.
struct TemplateCard {
    id: String,
    name: String,
    duration: String,
    thumb: String,
    variables: usize,
}

#[derive(Template)]
#[template(path = "console/templates.html")]
struct TemplatesPage {
    chrome: Chrome,
    templates: Vec<TemplateCard>,
    page: u32,
    more: bool,
}

#[derive(serde::Deserialize)]
pub struct PageNumber {
    page: Option<u32>,
}

#[get("/templates")]
pub async fn templates_page(state: web::Data<AppState>, visitor: SignedIn, query: web::Query<PageNumber>) -> Answer {
    let page = Page { limit: TEMPLATES_PER_PAGE, page: query.page.unwrap_or(1).max(1) };
    let views = state.farm.templates(&visitor.session.user.id, page.limit, page.offset()).await?;
    let more = views.len() == TEMPLATES_PER_PAGE as usize;
    let templates = views
        .iter()
        .map(|v| TemplateCard {
            id: v.record.id.to_string(),
            name: v.record.name.clone(),
            duration: seconds(v.record.duration_ms as f64 / 1000.0),
            thumb: thumb_of(&state, v),
            variables: v.document.clips.iter().flat_map(|c| &c.layers).filter(|l| l.variable.is_some()).count(),
        })
        .collect();
    Ok(html(StatusCode::OK, &TemplatesPage { chrome: visitor.chrome("templates"), templates, page: page.page, more }))
}

/// The address of a template's still (the library icon until it has one).
fn thumb_of(state: &AppState, view: &TemplateView) -> String {
    let key = view.record.thumb_key.as_deref();
    key.map(|k| state.backends.blobs().public_url(k)).unwrap_or_else(|| state.static_url("library.svg"))
}

/// `12 s`, `2.5 s`.
fn seconds(s: f64) -> String {
    format!("{} s", (s * 10.0).round() / 10.0)
}

/// A library file a media input offers.
#[derive(Clone)]
struct Choice {
    id: String,
    label: String,
}

/// One variable's inputs, filled in as last sent.
struct VariableInput {
    id: String,
    name: String,
    kind: &'static str,
    requirement: String,
    /// Text: the template's text; media: its file's address.
    default: String,
    multiline: bool,
    choices: Vec<Choice>,
    problem: Option<String>,
    text: String,
    rich: bool,
    asset: String,
    url: String,
    tts: String,
    voice: String,
    /// Captions: the SRT or WebVTT text given.
    captions: String,
}

/// A voice the speech inputs offer.
struct VoiceChoice {
    identifier: String,
    label: String,
}

#[derive(Template)]
#[template(path = "console/template.html")]
pub(super) struct TemplatePage {
    chrome: Chrome,
    id: String,
    name: String,
    duration: String,
    /// What the sound is brought to: the loudness target and the ducked sounds.
    sound: Option<String>,
    thumb: String,
    preview: Option<String>,
    /// The caller owns it: the studio is theirs to open.
    editable: bool,
    qualities: Vec<&'static str>,
    priorities: [&'static str; 3],
    /// The output formats, with what each is.
    formats: [(&'static str, &'static str); 6],
    inputs: Vec<VariableInput>,
    voices: Vec<VoiceChoice>,
    /// The form's other fields as last sent.
    quality: String,
    priority: String,
    format: String,
    transparent: bool,
    /// The template has captions layers: the form offers a subtitle track.
    captioned: bool,
    subtitles: bool,
    title: String,
    external_id: String,
    callback: String,
    /// Problems of the form's other fields, and of none in particular.
    problems: Problems,
    /// The idempotency key of this form: sending it twice makes one job.
    attempt: String,
    /// The spreadsheet form.
    pub(super) batch: BatchForm,
}

impl TemplatePage {
    /// The problem of the form's field `name`, if any.
    fn problem(&self, name: &str) -> Option<&str> {
        self.problems.get(name).map(String::as_str)
    }
}

#[get("/templates/{id}")]
pub async fn template_page(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let id = ids::in_path::<TemplateId>(&id)?;
    let attempt = reelfarm_domain::token::random_base62(24);
    let page = template_form(&state, &visitor, &id, Fields(vec![("attempt".into(), attempt)]), Problems::new()).await?;
    Ok(html(StatusCode::OK, &page))
}

/// The template page with its form filled in with `form`, showing `problems`.
pub(super) async fn template_form(
    state: &AppState,
    visitor: &SignedIn,
    id: &TemplateId,
    form: Fields,
    mut problems: Problems,
) -> Result<TemplatePage, ConsoleError> {
    let caller = visitor.caller();
    let view = state.farm.template(&caller.user.id, id).await?;
    let variables = view.variables(state.backends.blobs());
    let speaks = variables.iter().any(|v| v.kind == VariableType::Sound);
    let voices = if speaks { services::tts::voices(state, None).await? } else { Vec::new() };
    // The library files each kind of variable may take: one look per kind, however
    // many variables share it.
    let mut offered: Vec<(VariableType, Vec<Choice>)> = Vec::new();
    for kind in variables.iter().map(|v| v.kind) {
        if !offered.iter().any(|(k, _)| *k == kind) {
            offered.push((kind, choices(state, &caller, kind).await?));
        }
    }
    let inputs = variables
        .into_iter()
        .map(|variable| {
            let problem = problems.remove(&variable.id.to_string());
            let choices = offered.iter().find(|(k, _)| *k == variable.kind).map(|(_, c)| c.clone()).unwrap_or_default();
            input_of(variable, choices, &form, problem)
        })
        .collect();
    let field = |name: &str| form.get(name).unwrap_or_default().to_string();
    Ok(TemplatePage {
        chrome: visitor.chrome("templates"),
        id: view.record.id.to_string(),
        name: view.record.name.clone(),
        duration: seconds(view.record.duration_ms as f64 / 1000.0),
        sound: sound_summary(&view.document),
        thumb: thumb_of(state, &view),
        preview: view.record.preview_key.as_deref().map(|k| state.backends.blobs().public_url(k)),
        editable: view.record.owner_user_id.as_ref() == Some(&caller.user.id),
        qualities: ["default", "480p", "720p", "1080p"].into(),
        priorities: reelfarm_domain::priority::Priority::NAMES,
        formats: [
            ("mp4", "MP4 (H.264)"),
            ("webm", "WebM (VP9)"),
            ("gif", "Animated GIF (no sound)"),
            ("mov", "MOV (ProRes 4444, for editing)"),
            ("jpg", "JPEG still"),
            ("png", "PNG still"),
        ],
        inputs,
        voices: voices.into_iter().flat_map(voice_choices).collect(),
        quality: field("quality"),
        priority: match field("priority") {
            given if given.is_empty() => "normal".into(),
            given => given,
        },
        format: match field("format") {
            given if given.is_empty() => "mp4".into(),
            given => given,
        },
        transparent: form.get("transparent").is_some(),
        captioned: view.document.has_captions(),
        subtitles: form.get("subtitles").is_some(),
        title: field("title"),
        external_id: field("external_id"),
        callback: field("callback"),
        problems,
        attempt: field("attempt"),
        batch: BatchForm { attempt: reelfarm_domain::token::random_base62(24), ..BatchForm::default() },
    })
}

/// The caller's library files a variable of type `kind` may take.
async fn choices(state: &AppState, caller: &Caller, kind: VariableType) -> Result<Vec<Choice>, ConsoleError> {
    let kinds: &[AssetKind] = match kind {
        VariableType::Text | VariableType::Captions => return Ok(Vec::new()),
        VariableType::Image => &[AssetKind::Sprite, AssetKind::Svg],
        VariableType::Video => &[AssetKind::Video],
        VariableType::Sound => &[AssetKind::Sound],
    };
    let assets = reelfarm_app::assets::choosable(state.backends.store(), &caller.user.id, kinds, CHOICES).await?;
    Ok(assets.into_iter().map(|a| Choice { id: a.id.to_string(), label: a.label }).collect())
}

/// The inputs of `variable`, offering `choices` from the libraries.
fn input_of(variable: TemplateVariable, choices: Vec<Choice>, form: &Fields, problem: Option<String>) -> VariableInput {
    let id = variable.id.to_string();
    let sent = |prefix: &str| form.0.iter().find(|(k, _)| *k == format!("{prefix}.{id}")).map(|(_, v)| v.clone());
    let (requirement, multiline) = match (variable.kind, &variable.requirements) {
        (VariableType::Captions, Requirements::Sound { duration }) => (format!("shows {}", seconds(*duration)), false),
        (_, requirements) => describe(requirements),
    };
    let default = match variable.kind {
        VariableType::Text => rich::parse(&variable.default).map(|r| r.plain()).unwrap_or(variable.default),
        _ => variable.default,
    };
    VariableInput {
        name: variable.name,
        kind: variable.kind.as_str(),
        requirement,
        default,
        multiline,
        choices,
        problem,
        text: sent("text").unwrap_or_default(),
        rich: sent("rich").is_some(),
        asset: sent("asset").unwrap_or_default(),
        url: sent("url").unwrap_or_default(),
        tts: sent("tts").unwrap_or_default(),
        voice: sent("voice").unwrap_or_default(),
        captions: sent("captions").unwrap_or_default(),
        id,
    }
}

/// What a value must be, in words; whether text may have several lines.
fn describe(requirements: &Requirements) -> (String, bool) {
    match requirements {
        Requirements::Text { multiline, minimum_length, maximum_length } => {
            let lines = if *multiline { "several lines allowed" } else { "one line" };
            (format!("{minimum_length}–{maximum_length} characters, {lines}"), *multiline)
        }
        Requirements::Image { width, height } => (format!("{width}×{height} px, covered"), false),
        Requirements::Video { width, height, duration } => {
            (format!("{width}×{height} px, plays {}", seconds(*duration)), false)
        }
        Requirements::Sound { duration } => (format!("plays {}", seconds(*duration)), false),
    }
}

/// The voices of a provider as the speech inputs offer them (Google takes any voice
/// name, so it offers none).
fn voice_choices(provider: ProviderVoices) -> Vec<VoiceChoice> {
    let name = provider.provider.as_str();
    provider
        .voices
        .into_iter()
        .map(|v| VoiceChoice {
            label: format!("{name}: {} ({}, {})", v.name, v.language, v.gender),
            identifier: v.identifier,
        })
        .collect()
}

/// Sends the render form: a job of one video through the job service, then its page; the
/// form again with its problems when it is refused.
#[post("/templates/{id}/render")]
pub async fn render(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Answer {
    let form = Fields(form.into_inner());
    visitor.check_csrf(form.get("csrf").unwrap_or_default())?;
    let id = ids::in_path::<TemplateId>(&id)?;
    let caller = visitor.caller();
    let view = state.farm.template(&caller.user.id, &id).await?;
    let variables: Vec<_> =
        view.variables(state.backends.blobs()).into_iter().map(|v| (v.id.to_string(), v.kind)).collect();
    let problems = match render_form::job_body(id.as_str(), &variables, &form) {
        Ok(body) => {
            let respond = |job: &reelfarm_domain::job::JobRecord| job.id.to_string();
            match services::jobs::create(&state, &caller, &body, form.get("attempt"), respond).await {
                Ok(Created::New(job) | Created::Replayed(job)) => {
                    return Ok(see_other(&format!("/console/jobs/{job}")))
                }
                // The form's body never asks for a dry run.
                Ok(Created::Quote(_)) => problem("Nothing was sent; send the form again"),
                Err(e) if e.status_code() == StatusCode::CONFLICT => problem(SENT_ALREADY),
                Err(e) if !e.body().errors.is_empty() => render_form::problems_of(&e.body().errors),
                Err(e) if e.status_code().is_client_error() => problem(&e.body().message),
                Err(e) => return Err(e.into()),
            }
        }
        Err(problems) => problems,
    };
    let page = template_form(&state, &visitor, &id, form, problems).await?;
    Ok(html(StatusCode::BAD_REQUEST, &page))
}

/// "Sound brought to −14 LUFS · the soundtrack ducks 12 dB under speech" (`None` when
/// neither is set).
fn sound_summary(template: &reelfarm_domain::template::Template) -> Option<String> {
    use reelfarm_domain::template::Content;
    let mut parts = Vec::new();
    if let Some(loudness) = template.loudness {
        parts.push(format!("sound brought to {loudness} LUFS"));
    }
    let ducked = template.soundtrack.iter().filter_map(|s| s.duck.map(|d| ("the soundtrack".to_string(), d))).chain(
        template.clips.iter().flat_map(|c| &c.layers).filter_map(|l| match &l.content {
            Content::Sound(sound) => sound.duck.map(|d| (format!("\u{201c}{}\u{201d}", l.id), d)),
            _ => None,
        }),
    );
    for (who, duck) in ducked {
        parts.push(format!("{who} ducks {} dB under speech", duck.db));
    }
    let summary = parts.join(" · ");
    let mut chars = summary.chars();
    let first = chars.next()?;
    Some(first.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sound_summary_says_the_target_and_what_ducks() {
        let mut doc = serde_json::json!({ "version": 1, "name": "t", "canvas": { "width": 64, "height": 64, "fps": 10 },
            "clips": [{ "id": "a", "duration": 1, "layers": [
                { "id": "bed", "kind": "sound", "source": { "file": "a.mp3" }, "duck": { "db": 9 } }] }] });
        let summary = |doc: &serde_json::Value| {
            sound_summary(&reelfarm_domain::template::Template::from_json(serde_json::to_vec(doc).unwrap()).unwrap())
        };
        assert_eq!(summary(&doc).as_deref(), Some("\u{201c}bed\u{201d} ducks 9 dB under speech"));
        doc["loudness"] = serde_json::json!(-14);
        doc["soundtrack"] = serde_json::json!({ "source": { "file": "m.mp3" }, "duck": {} });
        let expected = "Sound brought to -14 LUFS · the soundtrack ducks 12 dB under speech · \u{201c}bed\u{201d} ducks 9 dB under speech";
        assert_eq!(summary(&doc).as_deref(), Some(expected));
        doc["clips"][0]["layers"][0].as_object_mut().unwrap().remove("duck");
        doc.as_object_mut().unwrap().retain(|k, _| k != "loudness" && k != "soundtrack");
        assert_eq!(summary(&doc), None);
    }
}
