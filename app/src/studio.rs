//! The studio's working copies: what a template's owner is editing, kept by the store as
//! a line of revisions ([`StudioSession`]), with the problems a save would find and the
//! frames of any kept revision. Only the owner has one; every edit names the revision it
//! was made to, so a stale tab's edit is a conflict rather than a lost update.

use reelfarm_domain::account::User;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::{StudioSession, TemplateRecord};
use serde_json::Value;

use crate::farm::Farm;
use crate::template_edit::SaveTemplate;
use crate::templates::TemplateView;
use crate::{AppError, Result};
use reelfarm_backends::store::{StudioStore, TemplateVersionStore};

impl Farm {
    /// `user`'s template `id` (not found or forbidden unless they own it) and their working
    /// copy of it: the one they left, or a new one from the current version (also when
    /// theirs started from an older version and has no edits to keep).
    pub async fn open_studio(&self, user: &User, id: &TemplateId) -> Result<(TemplateRecord, StudioSession)> {
        let record = self.owned_template(&user.id, id).await?;
        let store = self.backends.store();
        let session = match store.studio_session(&record.id, &user.id).await? {
            Some(session) if session.base_version == record.version || session.can_undo || session.can_redo => session,
            _ => store.open_studio_session(&record.id, &user.id, record.version, &record.json).await?,
        };
        Ok((record, session))
    }

    /// Records `doc` as `user`'s next revision of template `record`, made to revision
    /// `seen`: a conflict when the copy changed since (another tab).
    pub async fn edit_studio(
        &self,
        user: &User,
        record: &TemplateRecord,
        doc: &Value,
        seen: Option<i64>,
    ) -> Result<StudioSession> {
        let json = serde_json::to_string(doc).expect("documents serialize");
        Ok(self.backends.store().edit_studio_session(&record.id, &user.id, &json, seen).await?)
    }

    /// Undo (`step` −1) or redo (+1) from revision `seen`.
    pub async fn step_studio(
        &self,
        user: &User,
        record: &TemplateRecord,
        step: i64,
        seen: Option<i64>,
    ) -> Result<StudioSession> {
        Ok(self.backends.store().step_studio_session(&record.id, &user.id, step, seen).await?)
    }

    /// Drops every change: the working copy starts again from the current version.
    pub async fn discard_studio(&self, user: &User, record: &TemplateRecord) -> Result<StudioSession> {
        Ok(self.backends.store().open_studio_session(&record.id, &user.id, record.version, &record.json).await?)
    }

    /// Saves `session` (`user`'s working copy of `record`) as the next version, based on
    /// the version it started from; later saves start from the new one.
    pub async fn save_studio(
        &self,
        user: &User,
        record: &TemplateRecord,
        session: &StudioSession,
    ) -> Result<TemplateView> {
        let json = serde_json::from_str(&session.json)
            .map_err(|e| AppError::Failed(format!("the working copy is not JSON: {e}")))?;
        let request = SaveTemplate { json, base_version: Some(session.base_version) };
        let saved = self.save_template(user, &record.id, &request).await?;
        self.backends.store().rebase_studio_session(&record.id, &user.id, saved.record.version).await?;
        Ok(saved)
    }

    /// Restores version `version` of `user`'s template `record` as its newest version
    /// (checked again as a save), and starts the working copy again from it: the template
    /// after it, and the new copy.
    pub async fn restore_studio(
        &self,
        user: &User,
        record: &TemplateRecord,
        version: i64,
    ) -> Result<(TemplateRecord, StudioSession)> {
        let restored = self.restore_template(user, &record.id, version).await?.record;
        let session = self.discard_studio(user, &restored).await?;
        Ok((restored, session))
    }

    /// The newest `limit` versions of template `record`: number and when saved.
    pub async fn studio_versions(&self, record: &TemplateRecord, limit: u32) -> Result<Vec<(i64, i64)>> {
        let versions = self.backends.store().template_versions(&record.id, limit, 0).await?;
        Ok(versions.into_iter().map(|v| (v.version, v.created_at)).collect())
    }

    /// The problems a save of `doc` as the next version of `record` would report, by their
    /// path in the document (`""` for the whole).
    pub async fn studio_problems(
        &self,
        user: &User,
        record: &TemplateRecord,
        doc: &Value,
    ) -> Result<Vec<(String, String)>> {
        match self.check_template(user, doc, &record.files).await {
            Ok(_) => Ok(Vec::new()),
            Err(AppError::Invalid(errors)) => Ok(errors
                .into_iter()
                .map(|f| {
                    let path = f.field.strip_prefix("json").unwrap_or(&f.field);
                    (path.strip_prefix('.').unwrap_or(path).to_string(), f.message)
                })
                .collect()),
            Err(e) => Err(e),
        }
    }

    /// Revision `rev` of `user`'s working copy of template `id` (which they own), checked as
    /// a save would check it: the template and the document to draw a frame of at 480p.
    pub async fn studio_revision(&self, user: &User, id: &TemplateId, rev: i64) -> Result<StudioFrame> {
        let record = self.owned_template(&user.id, id).await?;
        let json = self
            .backends
            .store()
            .studio_revision(&record.id, &user.id, rev)
            .await?
            .ok_or(AppError::NotFound("revision"))?;
        let doc: Value =
            serde_json::from_str(&json).map_err(|e| AppError::Failed(format!("revision {rev} is not JSON: {e}")))?;
        let (template, json) = self.check_template(user, &doc, &record.files).await?;
        Ok(StudioFrame { record, template, json, quality: Quality::P480 })
    }
}

/// A revision of a working copy to draw a frame of: its template record (whose files it
/// may use), its checked document, and the size of the frame.
pub struct StudioFrame {
    pub record: TemplateRecord,
    pub template: reelfarm_domain::template::Template,
    pub json: String,
    pub quality: Quality,
}
