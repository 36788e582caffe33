//! What every handler can reach.

use reelfarm_shared::{Backends, Config};

/// Shared by every worker thread of the server.
pub struct AppState {
    pub config: Config,
    pub backends: Backends,
}

impl AppState {
    /// The absolute public address of a static file the api serves.
    pub fn static_url(&self, name: &str) -> String {
        format!("{}/static/{name}", self.config.public_url)
    }
}
