//! What an operator runs the farm with: tokens of any user, shared libraries, any job's
//! cancel, the accounts' shares of the farm, the workers in rotation and the storage each
//! user takes.

use reelfarm_backends::store::{
    AccountShare, JobStore, LibraryStore, RenderStore, ShareStore, TemplateStore, TokenRecord, Usage, UsageStore,
    UserStore, WorkerRecord, WorkerStore,
};
use reelfarm_domain::id::{now_ms, JobId, TemplateId};
use reelfarm_domain::library::{Library, LibraryKind, LibraryOwner};
use reelfarm_domain::priority::Priority;
use reelfarm_domain::status::JobStatus;
use reelfarm_domain::template::stored::ShareTarget;

use crate::accounts::MAX_NAME_CHARS;
use crate::{text, Actor, AppError, Result};

/// Workers seen within this long are listed.
const WORKERS_SEEN_WITHIN_MS: i64 = 3_600_000;

/// A new API token of the user `user` (name or id), valid for `days`; the token is
/// returned once.
#[tracing::instrument(name = "operations::create_token", skip_all)]
pub async fn create_token(
    store: &impl UserStore,
    actor: Actor<'_>,
    user: &str,
    days: u32,
) -> Result<(TokenRecord, String)> {
    actor.require_operator()?;
    if days == 0 {
        return Err(AppError::invalid("days", "must be at least 1"));
    }
    let user = store.find_user(user).await?;
    Ok(store.create_token(&user.id, days).await?)
}

/// Revokes the token of any user with this id or prefix.
#[tracing::instrument(name = "operations::revoke_token", skip_all)]
pub async fn revoke_token(store: &impl UserStore, actor: Actor<'_>, id_or_prefix: &str) -> Result<TokenRecord> {
    actor.require_operator()?;
    Ok(store.revoke_token(id_or_prefix).await?)
}

/// Which library an operator makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedLibrary<'a> {
    Public,
    Stock,
    /// Owned by the group of this name or id.
    Group(&'a str),
}

/// Makes a library every user (public, stock) or a group's members see.
#[tracing::instrument(name = "operations::create_library", skip_all)]
pub async fn create_library(
    store: &(impl LibraryStore + UserStore),
    actor: Actor<'_>,
    name: &str,
    kind: SharedLibrary<'_>,
) -> Result<Library> {
    actor.require_operator()?;
    let name = text::field("name", Some(name), MAX_NAME_CHARS).map_err(|e| AppError::Invalid(vec![e]))?;
    let (kind, owner) = match kind {
        SharedLibrary::Public => (LibraryKind::Public, LibraryOwner::Operator),
        SharedLibrary::Stock => (LibraryKind::Stock, LibraryOwner::Operator),
        SharedLibrary::Group(group) => (LibraryKind::Group, LibraryOwner::Group(store.find_group(group).await?.id)),
    };
    Ok(store.create_library(&name, kind, owner).await?)
}

/// Shares template `template_id` with the user or group `who` (name or id); returns what
/// it was shared with, as `user NAME` or `group NAME`.
#[tracing::instrument(name = "operations::share_template", skip_all)]
pub async fn share_template(
    store: &(impl TemplateStore + UserStore),
    actor: Actor<'_>,
    template_id: &str,
    who: &str,
) -> Result<(TemplateId, String)> {
    actor.require_operator()?;
    let id = TemplateId::parse(template_id).ok_or_else(|| AppError::NotFound("template"))?;
    let template = store.template(&id).await?;
    let (target, shown) = match store.find_user(who).await {
        Ok(user) => (ShareTarget::User(user.id), format!("user {}", user.name)),
        Err(reelfarm_backends::store::StoreError::NotFound(_)) => {
            let group = store.find_group(who).await.map_err(|e| match AppError::from(e) {
                AppError::NotFound(_) => AppError::NotFound("user or group"),
                e => e,
            })?;
            (ShareTarget::Group(group.id), format!("group {}", group.name))
        }
        Err(e) => return Err(e.into()),
    };
    store.share_template(&template.id, &target).await?;
    Ok((template.id, shown))
}

/// Cancels job `job_id` of any user, as its owner can; returns the videos cancelled and
/// the job's status after.
#[tracing::instrument(name = "operations::cancel_job", skip_all)]
pub async fn cancel_job(
    store: &(impl JobStore + RenderStore),
    actor: Actor<'_>,
    job_id: &str,
) -> Result<(JobId, usize, JobStatus)> {
    actor.require_operator()?;
    let id = JobId::parse(job_id).ok_or_else(|| AppError::NotFound("job"))?;
    let renders = store.cancel_job(&id).await?;
    let job = store.job_alone(&id).await?;
    Ok((id, renders, job.status))
}

/// Every account's share of the farm: weight, priority cap, renders running and waiting.
pub async fn shares(store: &impl ShareStore, actor: Actor<'_>) -> Result<Vec<AccountShare>> {
    actor.require_operator()?;
    Ok(store.shares().await?)
}

/// Sets the weight (at least 1) and/or the priority cap of the account of `who` (a user's
/// or a group's name or id); what is not given stays.
#[tracing::instrument(name = "operations::set_share", skip_all)]
pub async fn set_share(
    store: &impl ShareStore,
    actor: Actor<'_>,
    who: &str,
    weight: Option<i64>,
    max_priority: Option<&str>,
) -> Result<AccountShare> {
    actor.require_operator()?;
    if weight.is_none() && max_priority.is_none() {
        return Err(AppError::invalid("weight", "give a weight, a priority cap or both"));
    }
    if weight.is_some_and(|w| w < 1) {
        return Err(AppError::invalid("weight", "must be at least 1"));
    }
    let cap = max_priority
        .map(str::parse::<Priority>)
        .transpose()
        .map_err(|e| AppError::invalid("max_priority", e.to_string()))?;
    Ok(store.set_share(who, weight, cap).await?)
}

/// The workers seen in the last hour: renders done and failed, who is out of rotation.
pub async fn workers(store: &impl WorkerStore, actor: Actor<'_>) -> Result<Vec<WorkerRecord>> {
    actor.require_operator()?;
    Ok(store.workers(now_ms() - WORKERS_SEEN_WITHIN_MS).await?)
}

/// Takes worker `worker` (id or prefix) out of rotation, or puts it back (`in_rotation`).
#[tracing::instrument(name = "operations::set_rotation", skip_all)]
pub async fn set_rotation(
    store: &impl WorkerStore,
    actor: Actor<'_>,
    worker: &str,
    in_rotation: bool,
) -> Result<WorkerRecord> {
    actor.require_operator()?;
    let reason = (!in_rotation).then_some("taken out by an operator");
    Ok(store.set_rotation(worker, reason).await?)
}

/// The storage each user takes, or only `user`'s (name or id).
pub async fn usage(store: &(impl UsageStore + UserStore), actor: Actor<'_>, user: Option<&str>) -> Result<Vec<Usage>> {
    actor.require_operator()?;
    Ok(match user {
        Some(name_or_id) => store.storage_usage(Some(&store.find_user(name_or_id).await?.id)).await?,
        None => store.storage_usage(None).await?,
    })
}
