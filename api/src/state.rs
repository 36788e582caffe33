//! What every handler can reach.

use std::sync::Arc;

use reelfarm_app::Farm;
use reelfarm_backends::integration::Sealer;
use reelfarm_backends::store::StoreError;
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::id::{TemplateId, UserId};
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::template::Template;

/// Shared by every worker thread of the server.
pub struct AppState {
    pub config: Config,
    pub backends: Backends,
    /// Seals and opens the secrets of linked accounts (key from `config.storage.secret_key`).
    pub sealer: Sealer,
    /// Rate limits, with their fallback while the shared cache is down.
    pub limits: crate::limits::Limits,
    /// The bounded queue every password hash and check goes through.
    pub hashing: reelfarm_app::hashing::Hashing,
    /// The job use cases, with the template catalog they keep.
    pub farm: Farm,
}

impl AppState {
    pub fn new(config: Config, backends: Backends) -> AppState {
        AppState {
            sealer: Sealer::new(&config),
            limits: crate::limits::Limits::new(),
            hashing: reelfarm_app::hashing::Hashing::new(std::thread::available_parallelism().map_or(1, |n| n.get())),
            farm: Farm::new(&backends, &config),
            config,
            backends,
        }
    }

    /// The absolute public address of a static file the api serves.
    pub fn static_url(&self, name: &str) -> String {
        format!("{}/static/{name}", self.config.api.public_url)
    }

    /// The template `id` if `user_id` may see it (recently found visible: within 10 s).
    pub async fn visible_template(&self, id: &TemplateId, user_id: &UserId) -> Result<Arc<TemplateRecord>, StoreError> {
        self.farm.catalog().visible(id, user_id).await
    }

    /// The stored document of `record`, parsed once per version.
    pub fn template_document(&self, record: &TemplateRecord) -> Result<Arc<Template>, StoreError> {
        self.farm.catalog().document(record)
    }

    /// Forgets who was found to see template `id`, after it was saved or archived.
    pub fn forget_template(&self, id: &TemplateId) {
        self.farm.catalog().forget(id)
    }
}
