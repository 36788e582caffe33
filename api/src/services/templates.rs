//! Templates the caller may use: their records, documents, the addresses of their default
//! media and, for the owner, whom they are shared with.

use std::collections::HashMap;
use std::sync::Arc;

use reelfarm_backends::store::{ShareTarget, StoreError, TemplateRecord};
use reelfarm_backends::Blobs;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::{Source, Template, TemplateVariable};

use super::Result;
use crate::auth::Caller;
use crate::pagination::Page;
use crate::state::AppState;

/// A template as the caller sees it.
pub struct TemplateView {
    pub record: TemplateRecord,
    pub document: Arc<Template>,
    /// Public addresses of the library assets that are defaults of its variables, by
    /// asset id (empty for an asset deleted since).
    pub asset_addresses: Arc<HashMap<String, String>>,
    /// Whom the template is shared with: for its owner only, empty for everyone else.
    pub shares: Vec<ShareTarget>,
}

impl TemplateView {
    /// The template's variables, their default media resolved to public addresses.
    pub fn variables(&self, blobs: &Blobs) -> Vec<TemplateVariable> {
        self.document.variables(|source| match source {
            Source::File { file } => self.record.files.get(file).map(|key| blobs.public_url(key)).unwrap_or_default(),
            Source::Asset { asset } => self.asset_addresses.get(asset).cloned().unwrap_or_default(),
            Source::Url { url } => url.clone(),
        })
    }
}

/// The faces of every font family (see [`fonts`]).
pub const FONT_STYLES: [&str; 4] = ["regular", "bold", "italic", "bold italic"];

/// The font families a template may name, each with the faces of [`FONT_STYLES`].
pub fn fonts() -> &'static [&'static str] {
    reelfarm_domain::template::fonts::FAMILIES
}

/// A page of the templates the caller may use (own, shared with them or their groups,
/// public), newest first.
#[tracing::instrument(name = "templates::list", skip_all, fields(user_id = %caller.user.id))]
pub async fn list(state: &AppState, caller: &Caller, page: Page) -> Result<Vec<TemplateView>> {
    let records = state.backends.store.visible_templates(&caller.user.id, page.limit, page.offset()).await?;
    views(state, caller, records).await
}

/// One template the caller may use.
#[tracing::instrument(name = "templates::get", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn get(state: &AppState, caller: &Caller, id: &TemplateId) -> Result<TemplateView> {
    let record = state.backends.store.visible_template(id, &caller.user.id).await?;
    view(state, caller, record).await
}

/// The view of one template record as the caller sees it.
pub(super) async fn view(state: &AppState, caller: &Caller, record: TemplateRecord) -> Result<TemplateView> {
    Ok(views(state, caller, vec![record]).await?.pop().expect("one view per record"))
}

/// The views of `records`; the assets their variables default to are looked up once,
/// whatever number of templates use them.
async fn views(state: &AppState, caller: &Caller, records: Vec<TemplateRecord>) -> Result<Vec<TemplateView>> {
    let mut addresses = HashMap::new();
    let mut parts = Vec::with_capacity(records.len());
    for record in records {
        let document = state.template_document(&record)?;
        load_addresses(state, &document, &mut addresses).await?;
        let shares = if record.owner_user_id.as_ref() == Some(&caller.user.id) {
            state.backends.store.template_shares(&record.id).await?
        } else {
            Vec::new()
        };
        parts.push((record, document, shares));
    }
    let asset_addresses = Arc::new(addresses);
    Ok(parts
        .into_iter()
        .map(|(record, document, shares)| TemplateView {
            record,
            document,
            asset_addresses: asset_addresses.clone(),
            shares,
        })
        .collect())
}

/// Looks up the assets that are defaults of `template`'s variables and are not in
/// `addresses` yet.
async fn load_addresses(state: &AppState, template: &Template, addresses: &mut HashMap<String, String>) -> Result<()> {
    let layers = template.clips.iter().flat_map(|c| &c.layers).filter(|l| l.variable.is_some());
    for source in layers.filter_map(|l| l.content.source()) {
        let Source::Asset { asset } = source else { continue };
        if addresses.contains_key(asset) {
            continue;
        }
        let address = match state.backends.store.named_asset(asset).await {
            Ok(a) => a.original_key.map(|k| state.backends.blobs.public_url(&k)).unwrap_or_default(),
            // The asset was deleted since the import: there is no default to show.
            Err(StoreError::NotFound(_)) => String::new(),
            Err(e) => return Err(e.into()),
        };
        addresses.insert(asset.clone(), address);
    }
    Ok(())
}
