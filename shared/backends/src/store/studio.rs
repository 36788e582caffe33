//! The studio's working copies: per template and user, the document being
//! edited (not yet saved as a version) as a line of revisions. Every edit adds one after
//! the shown revision (dropping those an undo stepped back over); undo and redo move the
//! shown one. The oldest are forgotten beyond [`STUDIO_HISTORY`].

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::{Result, Store, StoreError, StudioSession};
use crate::store::StudioStore;
use reelfarm_domain::id::{now_ms, TemplateId, UserId};

/// Revisions kept for undo.
pub const STUDIO_HISTORY: i64 = 200;

/// How long an untouched working copy is kept.
pub const STUDIO_RETENTION_MS: i64 = 30 * 24 * 3600 * 1000;

/// The key of one working copy.
type Key<'a> = (&'a TemplateId, &'a UserId);

async fn session_in<'c>(
    executor: impl sqlx::Executor<'c, Database = Any>,
    (template, user): Key<'_>,
) -> Result<Option<StudioSession>> {
    let row = sqlx::query(
        "SELECT s.base_version, s.rev, s.bottom, s.top, s.updated_at, r.json FROM studio_sessions s \
         JOIN studio_revisions r ON r.template_id = s.template_id AND r.user_id = s.user_id AND r.rev = s.rev \
         WHERE s.template_id = $1 AND s.user_id = $2",
    )
    .bind(template.as_str())
    .bind(user.as_str())
    .fetch_optional(executor)
    .await?;
    row.as_ref().map(session_from).transpose()
}

fn session_from(row: &AnyRow) -> Result<StudioSession> {
    let (rev, bottom, top): (i64, i64, i64) = (row.try_get("rev")?, row.try_get("bottom")?, row.try_get("top")?);
    Ok(StudioSession {
        base_version: row.try_get("base_version")?,
        rev,
        json: row.try_get("json")?,
        can_undo: rev > bottom,
        can_redo: rev < top,
        updated_at: row.try_get("updated_at")?,
    })
}

async fn insert_revision(
    tx: &mut Transaction<'static, Any>,
    (template, user): Key<'_>,
    rev: i64,
    json: &str,
) -> Result<()> {
    sqlx::query("INSERT INTO studio_revisions (template_id, user_id, rev, json) VALUES ($1, $2, $3, $4)")
        .bind(template.as_str())
        .bind(user.as_str())
        .bind(rev)
        .bind(json)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Deletes the revisions of a working copy from `from` (inclusive) to `to` (exclusive).
async fn delete_revisions(
    tx: &mut Transaction<'static, Any>,
    (template, user): Key<'_>,
    from: i64,
    to: i64,
) -> Result<()> {
    sqlx::query("DELETE FROM studio_revisions WHERE template_id = $1 AND user_id = $2 AND rev >= $3 AND rev < $4")
        .bind(template.as_str())
        .bind(user.as_str())
        .bind(from)
        .bind(to)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// Why an edit from a revision did not land: the copy moved on, or is gone.
    async fn studio_conflict(&self, key: Key<'_>) -> StoreError {
        match session_in(&self.pool, key).await {
            Ok(Some(_)) => {
                StoreError::Conflict("the working copy was changed elsewhere (another tab or window).".into())
            }
            Ok(None) => StoreError::NotFound("studio session"),
            Err(e) => e,
        }
    }
}

impl StudioStore for Store {
    #[tracing::instrument(name = "store::studio_session", level = "debug", skip_all)]
    async fn studio_session(&self, template: &TemplateId, user: &UserId) -> Result<Option<StudioSession>> {
        session_in(&self.pool, (template, user)).await
    }

    #[tracing::instrument(name = "store::open_studio_session", level = "debug", skip_all)]
    async fn open_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        base_version: i64,
        json: &str,
    ) -> Result<StudioSession> {
        let key = (template, user);
        let mut tx = self.begin().await?;
        // Two opens at once (two tabs loading the studio) both land: the later one wins.
        sqlx::query(
            "INSERT INTO studio_sessions (template_id, user_id, base_version, rev, bottom, top, updated_at) \
             VALUES ($1, $2, $3, 1, 1, 1, $4) ON CONFLICT (template_id, user_id) DO UPDATE SET \
             base_version = excluded.base_version, rev = 1, bottom = 1, top = 1, updated_at = excluded.updated_at",
        )
        .bind(template.as_str())
        .bind(user.as_str())
        .bind(base_version)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        delete_revisions(&mut tx, key, i64::MIN, i64::MAX).await?;
        insert_revision(&mut tx, key, 1, json).await?;
        let session = session_in(&mut *tx, key).await?.ok_or(StoreError::NotFound("studio session"))?;
        tx.commit().await?;
        Ok(session)
    }

    #[tracing::instrument(name = "store::edit_studio_session", level = "debug", skip_all)]
    async fn edit_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        json: &str,
        seen: Option<i64>,
    ) -> Result<StudioSession> {
        let key = (template, user);
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "UPDATE studio_sessions SET rev = rev + 1, top = rev + 1, \
             bottom = CASE WHEN rev + 1 - bottom >= $3 THEN rev + 2 - $3 ELSE bottom END, updated_at = $4 \
             WHERE template_id = $1 AND user_id = $2 AND rev = COALESCE($5, rev) RETURNING rev, bottom",
        )
        .bind(template.as_str())
        .bind(user.as_str())
        .bind(STUDIO_HISTORY)
        .bind(now_ms())
        .bind(seen)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Err(self.studio_conflict(key).await);
        };
        let (rev, bottom): (i64, i64) = (row.try_get("rev")?, row.try_get("bottom")?);
        delete_revisions(&mut tx, key, rev, i64::MAX).await?;
        delete_revisions(&mut tx, key, i64::MIN, bottom).await?;
        insert_revision(&mut tx, key, rev, json).await?;
        let session = session_in(&mut *tx, key).await?.ok_or(StoreError::NotFound("studio session"))?;
        tx.commit().await?;
        Ok(session)
    }

    #[tracing::instrument(name = "store::step_studio_session", level = "debug", skip_all)]
    async fn step_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        step: i64,
        seen: Option<i64>,
    ) -> Result<StudioSession> {
        let key = (template, user);
        let mut tx = self.begin().await?;
        if let Some(seen) = seen {
            if session_in(&mut *tx, key).await?.is_some_and(|s| s.rev != seen) {
                tx.rollback().await?;
                return Err(self.studio_conflict(key).await);
            }
        }
        sqlx::query(
            "UPDATE studio_sessions SET rev = rev + $3, updated_at = $4 \
             WHERE template_id = $1 AND user_id = $2 AND rev + $3 >= bottom AND rev + $3 <= top",
        )
        .bind(template.as_str())
        .bind(user.as_str())
        .bind(step)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let session = session_in(&mut *tx, key).await?.ok_or(StoreError::NotFound("studio session"))?;
        tx.commit().await?;
        Ok(session)
    }

    #[tracing::instrument(name = "store::rebase_studio_session", level = "debug", skip_all)]
    async fn rebase_studio_session(&self, template: &TemplateId, user: &UserId, base_version: i64) -> Result<()> {
        sqlx::query("UPDATE studio_sessions SET base_version = $3 WHERE template_id = $1 AND user_id = $2")
            .bind(template.as_str())
            .bind(user.as_str())
            .bind(base_version)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::studio_revision", level = "debug", skip_all)]
    async fn studio_revision(&self, template: &TemplateId, user: &UserId, rev: i64) -> Result<Option<String>> {
        let row = sqlx::query("SELECT json FROM studio_revisions WHERE template_id = $1 AND user_id = $2 AND rev = $3")
            .bind(template.as_str())
            .bind(user.as_str())
            .bind(rev)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|row| row.try_get("json")).transpose()?)
    }

    #[tracing::instrument(name = "store::prune_studio_sessions", level = "debug", skip_all)]
    async fn prune_studio_sessions(&self, cutoff: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "DELETE FROM studio_revisions WHERE (template_id, user_id) IN \
             (SELECT template_id, user_id FROM studio_sessions WHERE updated_at < $1)",
        )
        .bind(cutoff)
        .execute(&mut *tx)
        .await?;
        let gone =
            sqlx::query("DELETE FROM studio_sessions WHERE updated_at < $1").bind(cutoff).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(gone.rows_affected())
    }
}
