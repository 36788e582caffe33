//! Templates made and changed by their owner (through the API and the studio): create,
//! save (every save a new version), duplicate, delete (archive), versions and restore.
//!
//! A saved document is checked as an import is (shape, then every rule), each problem
//! named by its JSON path under `json`, and so are its sources: library assets the owner
//! may use, addresses the outbound policy does not refuse, and `file` sources only among
//! the placeholder files stored with the template (an import's). A worker renders the
//! thumb and preview of each saved version.

use std::collections::BTreeMap;

use reelfarm_backends::store::{StoreError, TemplateStore, TemplateVersionStore};
use reelfarm_domain::account::User;
use reelfarm_domain::cost::Estimate;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{GroupId, TemplateId, UserId};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::{blob_prefix, NewTemplate, TemplateContent, TemplateRecord, TemplateVersion};
use reelfarm_domain::template::{Source, Template};

use crate::farm::Farm;
use crate::jobs::asset_problem;
use crate::templates::TemplateView;
use crate::{AppError, FieldError, Result};

/// A create or save: the document and the version the edit started from.
#[derive(Debug)]
pub struct SaveTemplate {
    /// The template document (`docs/templates.md`).
    pub json: serde_json::Value,
    /// The version the edit started from: when another save came in between, the save is
    /// a conflict instead of overwriting it.
    pub base_version: Option<i64>,
}

impl Farm {
    /// Creates a template owned by `user` from a document (version 1).
    #[tracing::instrument(name = "template_edit::create", skip_all, fields(user_id = %user.id))]
    pub async fn create_template(&self, user: &User, request: &SaveTemplate) -> Result<TemplateView> {
        let (template, json) = self.check_template(user, &request.json, &BTreeMap::new()).await?;
        let content = content_of(&template, json, &BTreeMap::new());
        self.made(user, content).await
    }

    /// Saves a new version of `user`'s template `id` and makes it the current one.
    #[tracing::instrument(name = "template_edit::save", skip_all, fields(user_id = %user.id, id = %id))]
    pub async fn save_template(&self, user: &User, id: &TemplateId, request: &SaveTemplate) -> Result<TemplateView> {
        let record = self.owned_template(&user.id, id).await?;
        let (template, json) = self.check_template(user, &request.json, &record.files).await?;
        let content = content_of(&template, json, &record.files);
        self.saved(user, id, &content, request.base_version).await
    }

    /// A copy of template `id` (any `user` may use, with its placeholder files) owned by
    /// `user`, named "… (copy)", at version 1.
    #[tracing::instrument(name = "template_edit::duplicate", skip_all, fields(user_id = %user.id, id = %id))]
    pub async fn duplicate_template(&self, user: &User, id: &TemplateId) -> Result<TemplateView> {
        let original = self.backends.store().visible_template(id, &user.id).await?;
        let document = self.catalog.document(&original)?;
        let problems = self.beyond_limits(&document, Quality::Default);
        if !problems.is_empty() {
            return Err(AppError::Invalid(problems));
        }
        let mut json: serde_json::Value = serde_json::from_str(&original.json)
            .map_err(|e| StoreError::Corrupt(format!("template {id} document: {e}")))?;
        let name = format!("{} (copy)", original.name);
        json["name"] = serde_json::Value::String(name.clone());
        let content = TemplateContent {
            name,
            category: original.category.clone(),
            tags: original.tags.clone(),
            json: json.to_string(),
            duration_ms: original.duration_ms,
            quality: original.quality,
            files: original.files.clone(),
            media_cost_ms: Estimate::template_media(&document).cpu_ms(),
        };
        self.made(user, content).await
    }

    /// Records `content` as a new template of `user`'s (version 1; a worker makes its thumb
    /// and preview).
    async fn made(&self, user: &User, content: TemplateContent) -> Result<TemplateView> {
        let id = TemplateId::generate();
        let new = NewTemplate {
            blob_prefix: blob_prefix(&id),
            id,
            name: content.name,
            owner_user_id: Some(user.id.clone()),
            public: false,
            category: content.category,
            tags: content.tags,
            json: content.json,
            duration_ms: content.duration_ms,
            quality: content.quality,
            files: content.files,
            thumb_key: None,
            preview_key: None,
        };
        let record = self.backends.store().create_saved_template(&new, content.media_cost_ms).await?;
        self.template_view(&user.id, record).await
    }

    /// Deletes `user`'s template `id`: it is archived, so nobody lists it or makes jobs
    /// of it any more, while its jobs and their videos stay.
    #[tracing::instrument(name = "template_edit::delete", skip_all, fields(user_id = %user, id = %id))]
    pub async fn delete_template(&self, user: &UserId, id: &TemplateId) -> Result<()> {
        self.owned_template(user, id).await?;
        self.backends.store().archive_template(id).await?;
        self.catalog.forget(id);
        Ok(())
    }

    /// The current version number of `user`'s template `id` and a page of its versions,
    /// newest first.
    #[tracing::instrument(name = "template_edit::versions", skip_all, fields(user_id = %user, id = %id))]
    pub async fn template_versions(
        &self,
        user: &UserId,
        id: &TemplateId,
        limit: u32,
        offset: u64,
    ) -> Result<(i64, Vec<TemplateVersion>)> {
        let current = self.owned_template(user, id).await?.version;
        Ok((current, self.backends.store().template_versions(id, limit, offset).await?))
    }

    /// The current version number of `user`'s template `id` and its version `version`.
    #[tracing::instrument(name = "template_edit::version", skip_all, fields(user_id = %user, id = %id))]
    pub async fn template_version(
        &self,
        user: &UserId,
        id: &TemplateId,
        version: i64,
    ) -> Result<(i64, TemplateVersion)> {
        let current = self.owned_template(user, id).await?.version;
        Ok((current, self.backends.store().template_version(id, version).await?))
    }

    /// Saves version `version` of `user`'s template `id` again, as a new version: jobs
    /// render it from now on.
    #[tracing::instrument(name = "template_edit::restore", skip_all, fields(user_id = %user.id, id = %id))]
    pub async fn restore_template(&self, user: &User, id: &TemplateId, version: i64) -> Result<TemplateView> {
        self.owned_template(&user.id, id).await?;
        let old = self.backends.store().template_version(id, version).await?;
        let document: serde_json::Value = serde_json::from_str(&old.json)
            .map_err(|e| StoreError::Corrupt(format!("template {id} version {version}: {e}")))?;
        // Checked as a save is: the rules, `user`'s access to its assets and the outbound
        // policy may have changed since it was saved.
        let (template, json) = self.check_template(user, &document, &old.files).await?;
        let content = content_of(&template, json, &old.files);
        self.saved(user, id, &content, None).await
    }

    async fn saved(
        &self,
        user: &User,
        id: &TemplateId,
        content: &TemplateContent,
        base: Option<i64>,
    ) -> Result<TemplateView> {
        let record = self.backends.store().save_template(id, content, &user.id, base).await?;
        self.catalog.forget(id);
        self.template_view(&user.id, record).await
    }

    /// Template `id` if `user` owns it: not found when they cannot see it, forbidden when
    /// they can but it is someone else's (shared or public).
    pub async fn owned_template(&self, user: &UserId, id: &TemplateId) -> Result<TemplateRecord> {
        let record = self.backends.store().visible_template(id, user).await?;
        if record.owner_user_id.as_ref() != Some(user) {
            return Err(AppError::Forbidden(
                "only the template's owner can change it; duplicate it to make your own".into(),
            ));
        }
        Ok(record)
    }

    /// The document checked, and as text: every problem at once, each at its JSON path under
    /// `json` (shape and rules first; the sources when those pass).
    pub async fn check_template(
        &self,
        user: &User,
        json: &serde_json::Value,
        files: &BTreeMap<String, String>,
    ) -> Result<(Template, String)> {
        let text = json.to_string();
        let template = Template::from_json(&text).map_err(|e| {
            let key = e.key();
            AppError::Invalid(
                e.errors().into_iter().map(|p| FieldError::new(under_json(&p.path), key, p.message)).collect(),
            )
        })?;
        // What a render of it would ask of the farm, at the template's own size.
        let limits = self.limits.check(&template, Quality::Default, &|_| None);
        let mut problems: Vec<FieldError> = limits
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|p| FieldError::new(under_json(&p.path), ErrorKey::LimitExceeded, p.message))
            .collect();
        let mut groups: Option<Vec<GroupId>> = None;
        for (path, source, media) in template.sources_at() {
            let (field, problem) = match source {
                Source::File { file } if files.contains_key(file) => continue,
                Source::File { file } => (
                    format!("{path}.file"),
                    Some((
                        ErrorKey::UnknownFile,
                        format!("no file {file:?} is stored with this template; use a library asset or an address"),
                    )),
                ),
                Source::Url { url } => (format!("{path}.url"), self.refused_address(url)),
                Source::Asset { asset } => {
                    if groups.is_none() {
                        groups = Some(crate::libraries::group_ids(self.backends.store(), &user.id).await?);
                    }
                    let groups = groups.as_deref().unwrap_or_default();
                    (format!("{path}.asset"), asset_problem(self.backends.store(), user, groups, asset, media).await?)
                }
            };
            if let Some((key, message)) = problem {
                problems.push(FieldError::new(under_json(&field), key, message));
            }
        }
        if !problems.is_empty() {
            return Err(AppError::Invalid(problems));
        }
        Ok((template, text))
    }
}

/// What a save stores of `template`: its listing fields, and of `files` those it uses.
fn content_of(template: &Template, json: String, files: &BTreeMap<String, String>) -> TemplateContent {
    let used: BTreeMap<String, String> = template
        .sources_at()
        .into_iter()
        .filter_map(|(_, source, _)| match source {
            Source::File { file } => files.get_key_value(file).map(|(k, v)| (k.clone(), v.clone())),
            _ => None,
        })
        .collect();
    TemplateContent {
        name: template.name.clone(),
        category: template.category.clone(),
        tags: template.tags.clone(),
        json,
        duration_ms: (template.duration() * 1000.0).round() as i64,
        quality: Quality::of_canvas(template.canvas.width, template.canvas.height),
        files: used,
        media_cost_ms: Estimate::template_media(template).cpu_ms(),
    }
}

/// A path in the document as a field of the request body.
fn under_json(path: &str) -> String {
    if path.is_empty() {
        "json".into()
    } else {
        format!("json.{path}")
    }
}
