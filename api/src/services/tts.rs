//! The text-to-speech voices of this deployment's providers.

use actix_web::web;
use reelfarm_domain::tts::{Provider, Voice};
use reelfarm_tts::Variant;

use super::Result;
use crate::error::ApiError;
use crate::state::AppState;

/// One available provider with its voices and (espeak) variants.
pub struct ProviderVoices {
    pub provider: Provider,
    pub voices: Vec<Voice>,
    pub variants: Vec<Variant>,
}

/// The providers available here (only `wanted` when given), each with its voices.
#[tracing::instrument(name = "tts::voices", skip_all)]
pub async fn voices(state: &AppState, wanted: Option<Provider>) -> Result<Vec<ProviderVoices>> {
    let catalog = state.farm.voices().clone();
    // The first look at espeak's voices runs `espeak-ng --voices`.
    web::block(move || {
        catalog
            .providers()
            .into_iter()
            .filter(|(provider, available)| *available && wanted.is_none_or(|w| w == *provider))
            .map(|(provider, _)| ProviderVoices {
                provider,
                voices: catalog.list(provider),
                variants: catalog.variants(provider),
            })
            .collect()
    })
    .await
    .map_err(|e| ApiError::internal(&e))
}
