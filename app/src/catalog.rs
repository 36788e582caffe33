//! The templates jobs are made from, as this process keeps them: parsed documents by id
//! and version (a version's document never changes, so an entry never goes stale), and
//! which user was recently found to see which template (job creation's hot path).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reelfarm_backends::store::{StoreError, TemplateStore};
use reelfarm_backends::weighed::WeighedLru;
use reelfarm_backends::Store;
use reelfarm_domain::id::{TemplateId, UserId};
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::template::Template;

/// What a parsed document weighs per byte of its JSON, about (strings, vectors and enums
/// of the parsed tree).
const PARSED_PER_JSON_BYTE: usize = 3;
/// What an entry weighs beside its JSON (keys, ids, the record's other fields).
const ENTRY_BYTES: usize = 256;
/// How long a template found visible to a user is taken as visible without asking the
/// store again: a share removed takes effect within this.
const VISIBILITY_TTL: Duration = Duration::from_secs(10);

/// A template found visible to a user, and when.
type Visible = (Instant, Arc<TemplateRecord>);

/// Parsed template documents and recent visibility, shared by every request of a process;
/// each kept in half of the configured bytes (`template_cache`), the least recently used
/// going first.
pub struct Catalog {
    store: Store,
    templates: Mutex<WeighedLru<(TemplateId, i64), Arc<Template>>>,
    visible: Mutex<WeighedLru<(UserId, TemplateId), Visible>>,
}

impl Catalog {
    pub fn new(store: Store, bytes: usize) -> Catalog {
        Catalog {
            store,
            templates: Mutex::new(WeighedLru::named("template", bytes / 2)),
            visible: Mutex::new(WeighedLru::named("visibility", bytes / 2)),
        }
    }

    /// The template `id` if `user_id` may see it (see [`VISIBILITY_TTL`]).
    pub async fn visible(&self, id: &TemplateId, user_id: &UserId) -> Result<Arc<TemplateRecord>, StoreError> {
        let key = (user_id.clone(), id.clone());
        if let Some((at, record)) = self.visible.lock().expect("visibility cache lock").get(&key) {
            if at.elapsed() < VISIBILITY_TTL {
                return Ok(record.clone());
            }
        }
        let record = Arc::new(self.store.visible_template(id, user_id).await?);
        let weight = record.json.len() + ENTRY_BYTES;
        self.visible.lock().expect("visibility cache lock").put(key, (Instant::now(), record.clone()), weight);
        Ok(record)
    }

    /// The stored document of `record`, read for its shape only: it was validated when
    /// imported or saved, and a rule added since must not make an existing template unreadable.
    pub fn document(&self, record: &TemplateRecord) -> Result<Arc<Template>, StoreError> {
        let key = (record.id.clone(), record.version);
        if let Some(cached) = self.templates.lock().expect("template cache lock").get(&key) {
            return Ok(cached.clone());
        }
        let template: Template = serde_json::from_str(&record.json)
            .map_err(|e| StoreError::Corrupt(format!("template {} document: {e}", record.id)))?;
        let template = Arc::new(template);
        let weight = record.json.len() * PARSED_PER_JSON_BYTE + ENTRY_BYTES;
        self.templates.lock().expect("template cache lock").put(key, template.clone(), weight);
        Ok(template)
    }

    /// Forgets who was found to see template `id`, after it was saved or archived: this
    /// process's next job of it reads the current version. (Other processes may use their
    /// entry for up to [`VISIBILITY_TTL`].)
    pub fn forget(&self, id: &TemplateId) {
        self.visible.lock().expect("visibility cache lock").retain(|(_, t)| t != id);
    }
}
