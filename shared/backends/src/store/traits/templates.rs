//! Templates, their versions and the studio's working copies.

use std::future::Future;

use reelfarm_domain::id::{TemplateId, UserId};

use crate::store::{NewTemplate, Result, ShareTarget, StudioSession, TemplateContent, TemplateRecord, TemplateVersion};

/// Templates and who they are shared with. (`templates.rs`)
pub trait TemplateStore {
    /// Records a template whose files are stored. A template without an owner must be
    /// public (nobody else could see it).
    fn create_template(&self, new: &NewTemplate) -> impl Future<Output = Result<TemplateRecord>> + Send;

    fn template(&self, id: &TemplateId) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The template `id` if `user_id` may see it; `NotFound` otherwise, so that the ids
    /// of others' templates do not leak.
    fn visible_template(
        &self,
        id: &TemplateId,
        user_id: &UserId,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The templates `user_id` may see, newest first, `limit` from `offset`.
    fn visible_templates(
        &self,
        user_id: &UserId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<TemplateRecord>>> + Send;

    /// Shares the template with a user or a group; sharing twice changes nothing.
    fn share_template(&self, template_id: &TemplateId, with: &ShareTarget) -> impl Future<Output = Result<()>> + Send;

    /// Whom the template is shared with, in the order shared.
    fn template_shares(&self, template_id: &TemplateId) -> impl Future<Output = Result<Vec<ShareTarget>>> + Send;
}

/// Saved versions of templates. (`template_versions.rs`)
pub trait TemplateVersionStore {
    /// Creates a template saved through the API (its version 1) and asks a worker for its
    /// thumb and preview, in one transaction.
    fn create_saved_template(
        &self,
        new: &NewTemplate,
        media_cost_ms: i64,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// Saves `content` as the next version of template `id`, makes it current and asks a
    /// worker for its thumb and preview (until they are made, the previous ones stay). With
    /// `base`, only when the current version is `base`: a `Conflict` says someone saved in
    /// between. An archived template is `NotFound`.
    fn save_template(
        &self,
        id: &TemplateId,
        content: &TemplateContent,
        saved_by: &UserId,
        base: Option<i64>,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The versions of template `id`, newest first, `limit` from `offset`.
    fn template_versions(
        &self,
        id: &TemplateId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<TemplateVersion>>> + Send;

    fn template_version(&self, id: &TemplateId, version: i64) -> impl Future<Output = Result<TemplateVersion>> + Send;

    /// Template `id` with the document, files and number of `version` (the current one for
    /// `None`): what a job that pinned `version` renders. The listing fields (name,
    /// duration, …) stay the current version's.
    fn template_at(&self, id: &TemplateId, version: Option<i64>)
        -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// Archives template `id`: nobody sees it or makes jobs of it any more; its jobs, their
    /// videos and its versions stay. Archiving twice changes nothing.
    fn archive_template(&self, id: &TemplateId) -> impl Future<Output = Result<()>> + Send;

    /// Records the thumb and preview rendered for `version`, if it is still the current
    /// version; `false` (nothing written) when a later save replaced it.
    fn set_template_media(
        &self,
        id: &TemplateId,
        version: i64,
        thumb_key: &str,
        preview_key: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// The studio's working copies. (`studio.rs`)
pub trait StudioStore {
    /// The working copy of `user` on `template`, if there is one.
    fn studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
    ) -> impl Future<Output = Result<Option<StudioSession>>> + Send;

    /// Starts a working copy of `user` on `template` from version `base_version`'s `json`,
    /// replacing the one there was (its history too).
    fn open_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        base_version: i64,
        json: &str,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// Records an edit made to revision `seen` (any revision for `None`): `json` becomes
    /// the revision after it and is shown; the revisions an undo had stepped back over are
    /// dropped, and the oldest beyond [`STUDIO_HISTORY`](crate::store::STUDIO_HISTORY). `Conflict`
    /// when another edit, undo or redo came after `seen` (another tab); `NotFound` without
    /// a working copy.
    fn edit_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        json: &str,
        seen: Option<i64>,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// Undo (`step` −1) or redo (+1) from revision `seen` (any for `None`): shows the
    /// revision before or after it. At either end of the history, the working copy as it
    /// is; `Conflict` when the shown revision is no longer `seen`.
    fn step_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        step: i64,
        seen: Option<i64>,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// After a save of the working copy as version `base_version`: later saves start from
    /// it.
    fn rebase_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        base_version: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The document of revision `rev` of a working copy, if it is still kept.
    fn studio_revision(
        &self,
        template: &TemplateId,
        user: &UserId,
        rev: i64,
    ) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Deletes working copies untouched since `cutoff` (Unix milliseconds); how many.
    fn prune_studio_sessions(&self, cutoff: i64) -> impl Future<Output = Result<u64>> + Send;
}
