//! Templates as they are stored: the record of each template (who owns it, who may see
//! it, its current document and files), its saved versions and the studio's working
//! copies. The store maps rows to and from these.

use std::collections::BTreeMap;

use crate::id::{GroupId, TemplateId, UserId};
use crate::quality::Quality;

/// Everything of a template but what the store sets (`archived`, `created_at`). The id
/// and blob prefix are chosen before the record is written, because the template's files
/// are stored under them first: a template appears only once its files are in place.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTemplate {
    pub id: TemplateId,
    pub name: String,
    /// `None` for a public template of the operator's.
    pub owner_user_id: Option<UserId>,
    pub public: bool,
    pub category: String,
    pub tags: Vec<String>,
    /// The template document, as imported.
    pub json: String,
    pub duration_ms: i64,
    pub quality: Quality,
    /// See [`blob_prefix`].
    pub blob_prefix: String,
    /// `file` path in the document → blob key of the stored file.
    pub files: BTreeMap<String, String>,
    pub thumb_key: Option<String>,
    pub preview_key: Option<String>,
}

/// A stored template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateRecord {
    pub id: TemplateId,
    pub name: String,
    pub owner_user_id: Option<UserId>,
    pub public: bool,
    pub category: String,
    pub tags: Vec<String>,
    pub json: String,
    pub duration_ms: i64,
    pub quality: Quality,
    pub blob_prefix: String,
    pub files: BTreeMap<String, String>,
    pub thumb_key: Option<String>,
    pub preview_key: Option<String>,
    pub archived: bool,
    pub created_at: i64,
    /// The current version: the one new jobs render (1 for a new template).
    pub version: i64,
}

/// Someone a template is shared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareTarget {
    User(UserId),
    Group(GroupId),
}

/// A new unguessable prefix for the blobs of template `id`: `templates/{id}/{16 base62}`.
pub fn blob_prefix(id: &TemplateId) -> String {
    format!("templates/{id}/{}", crate::token::random_base62(16))
}

/// What a save sets: the document and what is derived from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateContent {
    pub name: String,
    pub category: String,
    pub tags: Vec<String>,
    pub json: String,
    pub duration_ms: i64,
    pub quality: Quality,
    /// `file` path in the document → blob key (the template's stored placeholder files
    /// that this version still uses).
    pub files: BTreeMap<String, String>,
    /// Estimated CPU-milliseconds of making its thumb and preview.
    pub media_cost_ms: i64,
}

/// One saved version of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateVersion {
    pub template_id: TemplateId,
    pub version: i64,
    pub json: String,
    pub files: BTreeMap<String, String>,
    /// Who saved it (for an import, its owner); `None` for an import without an owner.
    pub saved_by: Option<UserId>,
    pub created_at: i64,
}

/// A working copy at its shown revision.
#[derive(Debug, Clone, PartialEq)]
pub struct StudioSession {
    /// The saved version the edits started from.
    pub base_version: i64,
    /// The shown revision and its document.
    pub rev: i64,
    pub json: String,
    pub can_undo: bool,
    pub can_redo: bool,
    pub updated_at: i64,
}
