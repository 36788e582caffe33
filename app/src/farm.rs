//! [`Farm`]: the use cases that keep state of their own (the template catalog) or need
//! the deployment's settings, as one object the API builds at start. Its methods are in
//! the modules of what they do (`templates`, `jobs`, `drafts`, `previews`, `template_edit`,
//! `studio`).

use reelfarm_backends::{Backends, Config};
use reelfarm_domain::cost::Limits;
use reelfarm_outbound::AllowEntry;
use reelfarm_tts::Voices;

use crate::catalog::Catalog;

/// The use cases of what the farm makes (templates, jobs, drafts, preview frames) with
/// what they need of the deployment: the backends, the template catalog, the voices and
/// the limits of a render. One per api process.
pub struct Farm {
    pub(crate) backends: Backends,
    pub(crate) catalog: Catalog,
    pub(crate) voices: Voices,
    pub(crate) limits: Limits,
    pub(crate) draft_minutes: Option<u32>,
    pub(crate) outbound_allow: Vec<AllowEntry>,
}

impl Farm {
    pub fn new(backends: &Backends, config: &Config) -> Farm {
        Farm {
            backends: backends.clone(),
            catalog: Catalog::new(backends.store().clone(), config.caches.template_cache),
            voices: Voices {
                polly: config.speech.polly_region.is_some(),
                google: config.speech.google_tts_api_key.is_some(),
            },
            limits: config.render,
            draft_minutes: config.api.draft_minutes,
            outbound_allow: config.ops.outbound_allow.clone(),
        }
    }

    /// The templates jobs are made from.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The text-to-speech voices this deployment offers.
    pub fn voices(&self) -> &Voices {
        &self.voices
    }
}
