//! The voices of the text-to-speech providers of this deployment (an addition),
//! so that callers need not guess the identifiers of tts values.

use actix_web::{get, web, HttpResponse};
use reelfarm_domain::tts::Voice;
use reelfarm_tts::Variant;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::services;
use crate::state::AppState;

/// The providers available here, each with its voices.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoicesJson {
    pub providers: Vec<ProviderJson>,
}

/// One provider and its voices.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderJson {
    /// `espeak`, `polly` or `google`: the first segment of an identifier.
    pub provider: String,
    /// The voices; empty for `google`, which takes any Google voice name (see `note`).
    /// Each has `identifier`, `voice`, `name`, `gender`, `language`, `engines` and
    /// `aliases` (espeak: the other codes that reach it in the voice segment, e.g. `en`).
    #[schema(value_type = Vec<Object>)]
    pub voices: Vec<Voice>,
    /// espeak's variants (other timbres of any voice), each `{"variant", "name",
    /// "gender"}`: `VOICE+VARIANT` in the voice segment, e.g. `en-us+f3`; empty for the
    /// others.
    #[schema(value_type = Vec<Object>)]
    pub variants: Vec<Variant>,
    /// How identifiers of this provider are formed.
    pub note: String,
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct VoicesQuery {
    /// Only this provider.
    #[param(value_type = Option<ProviderName>, inline)]
    pub provider: Option<String>,
}

/// A text-to-speech provider, as the first segment of an identifier names it.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum ProviderName {
    Espeak,
    Polly,
    Google,
}

/// The text-to-speech voices available to jobs, by provider, with ready identifiers.
#[utoipa::path(
    tag = "jobs",
    params(VoicesQuery),
    responses((status = 200, body = VoicesJson), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/tts/voices")]
pub async fn voices(
    state: web::Data<AppState>,
    _caller: Caller,
    query: web::Query<VoicesQuery>,
) -> Result<HttpResponse, ApiError> {
    let wanted = match query.provider.as_deref() {
        None => None,
        Some(name) => Some(reelfarm_domain::tts::Provider::parse(name).ok_or_else(|| {
            ApiError::invalid_request(format!("unknown provider {name:?} in `provider`; use espeak, polly or google"))
        })?),
    };
    let providers = services::tts::voices(&state, wanted)
        .await?
        .into_iter()
        .map(|p| ProviderJson {
            provider: p.provider.as_str().to_string(),
            note: note(p.provider.as_str()).to_string(),
            voices: p.voices,
            variants: p.variants,
        })
        .collect();
    Ok(HttpResponse::Ok().json(VoicesJson { providers }))
}

fn note(provider: &str) -> &'static str {
    match provider {
        "espeak" => "espeak;VOICE;GENDER;LANGUAGE;none;none — local espeak-ng voices; VOICE is a voice's code, one of its aliases or its name, any case, optionally followed by +VARIANT from variants (espeak;en-us+f3;female;en-US;none;none); gender female without a variant picks f3",
        "polly" => "polly;VOICE;GENDER;LANGUAGE;ENGINE;none — voice, language and engine required (engine one of the voice's engines)",
        _ => "google;VOICE;GENDER;LANGUAGE;none;none — any Google Cloud Text-to-Speech voice name such as en-US-Neural2-C; the language defaults to the voice's",
    }
}
