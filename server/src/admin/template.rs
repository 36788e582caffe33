//! Template imports for the binary's own callers (the first run's examples, benches,
//! tests): [`reelfarm_app::templates::import`] with the previews rendered in this
//! process, its errors as the command line prints them.

use std::path::Path;

use reelfarm_app::templates::{self, ImportTemplate};
use reelfarm_app::Actor;
use reelfarm_backends::{Blobs, Store};
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::stored::TemplateRecord;

use crate::previews::LocalPreviews;

/// Who a template is imported for.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// Owning user (name or id). Required unless `public`.
    pub owner: Option<String>,
    /// Visible to every user.
    pub public: bool,
    /// Longest the preview render may take.
    pub time_limit: std::time::Duration,
    /// What a render of the template may ask of the farm (`Config::render_limits`).
    pub limits: reelfarm_domain::cost::Limits,
}

/// Imports the template file at `path`; returns the stored template.
pub async fn import(
    store: &Store,
    blobs: &Blobs,
    path: &Path,
    options: &ImportOptions,
) -> anyhow::Result<TemplateRecord> {
    import_as(store, blobs, path, options, None).await
}

/// [`import`] under a fixed template id (`None`: a new one). Importing an id that exists
/// fails with a conflict and leaves the stored template as it was.
pub async fn import_as(
    store: &Store,
    blobs: &Blobs,
    path: &Path,
    options: &ImportOptions,
    id: Option<&TemplateId>,
) -> anyhow::Result<TemplateRecord> {
    let renderer = LocalPreviews { store, blobs, time_limit: options.time_limit, limits: options.limits };
    let new = ImportTemplate {
        path: path.to_path_buf(),
        owner: options.owner.clone(),
        public: options.public,
        limits: options.limits,
        id: id.cloned(),
    };
    templates::import(store, blobs, &renderer, Actor::Cli, &new)
        .await
        .map_err(|e| anyhow::anyhow!("{} cannot be imported: {}", path.display(), super::cli_error(e)))
}
