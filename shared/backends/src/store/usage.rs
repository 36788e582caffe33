//! Storage used per user: the bytes of every asset file a user owns, originals
//! and renditions, for the upload quota and `reelfarm admin usage`; and the characters
//! each user sent to paid text-to-speech providers.
//!
//! An asset's original is counted by its `size` (set when the upload is stored, also
//! while it converts and after a failed conversion, whose original is kept); its other
//! files by the sizes in its `renditions` (which list the original too, skipped). Rendered
//! videos and template media are not counted. An upload in progress counts with what it
//! reserved (its announced length, else as much as may come), while it is alive.

use sqlx::Row;

use super::{id, Dialect, Result, Store, StoreError, STALE_UPLOAD_MS};
use crate::store::UsageStore;
use reelfarm_domain::id::{now_ms, AssetId, UserId};
use reelfarm_domain::status::RenderStatus;

/// Storage used by one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    pub user_id: UserId,
    pub user_name: String,
    /// Assets the user owns, whatever their status.
    pub assets: u64,
    /// Bytes their files take in the blob store.
    pub bytes: u64,
    /// Characters sent to paid text-to-speech providers (Polly, Google), all time.
    pub tts_characters: u64,
}

/// The videos of a user's jobs asked for in a period, by how they stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderCounts {
    pub succeeded: u64,
    pub failed: u64,
    /// Pending or rendering.
    pub running: u64,
}

impl Store {
    /// SQL of the bytes of asset `a`'s renditions but the original (its `renditions` is a
    /// JSON array of `{role, size, …}`), in this dialect.
    fn rendition_bytes(&self) -> &'static str {
        match self.dialect {
            Dialect::Sqlite => {
                "(SELECT COALESCE(SUM(json_extract(r.value, '$.size')), 0) FROM json_each(a.renditions) AS r \
                 WHERE json_extract(r.value, '$.role') <> 'original')"
            }
            Dialect::Postgres => {
                "(SELECT COALESCE(SUM((r.value ->> 'size')::BIGINT), 0) \
                 FROM jsonb_array_elements(a.renditions::jsonb) AS r(value) WHERE r.value ->> 'role' <> 'original')"
            }
        }
    }
}

impl UsageStore for Store {
    #[tracing::instrument(name = "store::renders_since", level = "debug", skip_all)]
    async fn renders_since(&self, user_id: &UserId, since: i64) -> Result<RenderCounts> {
        let rows = sqlx::query(
            "SELECT r.status, COUNT(*) AS n FROM renders r JOIN jobs j ON j.id = r.job_id \
             WHERE j.user_id = $1 AND j.created_at >= $2 GROUP BY r.status",
        )
        .bind(user_id.as_str())
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        let mut counts = RenderCounts::default();
        for row in rows {
            let n = row.try_get::<i64, _>("n")?.max(0) as u64;
            match RenderStatus::parse(&row.try_get::<String, _>("status")?) {
                Some(RenderStatus::Success) => counts.succeeded += n,
                Some(RenderStatus::Failed) => counts.failed += n,
                _ => counts.running += n,
            }
        }
        Ok(counts)
    }

    #[tracing::instrument(name = "store::storage_usage", level = "debug", skip_all)]
    async fn storage_usage(&self, user_id: Option<&UserId>) -> Result<Vec<Usage>> {
        let filter = if user_id.is_some() { "WHERE u.id = $1" } else { "" };
        let sql = format!(
            "SELECT u.id, u.name, COUNT(a.id) AS assets, \
             CAST(COALESCE(SUM(COALESCE(a.size, 0) + {}), 0) AS BIGINT) AS bytes, \
             CAST((SELECT COALESCE(SUM(t.characters), 0) FROM tts_usage t WHERE t.user_id = u.id) AS BIGINT) \
             AS tts_characters \
             FROM users u LEFT JOIN assets a ON a.owner_user_id = u.id {filter} \
             GROUP BY u.id, u.name ORDER BY u.name",
            self.rendition_bytes()
        );
        let mut query = sqlx::query(&sql);
        if let Some(user_id) = user_id {
            query = query.bind(user_id.as_str());
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                Ok(Usage {
                    user_id: id(row, "id")?,
                    user_name: row.try_get("name")?,
                    assets: row.try_get::<i64, _>("assets")?.max(0) as u64,
                    bytes: row.try_get::<i64, _>("bytes")?.max(0) as u64,
                    tts_characters: row.try_get::<i64, _>("tts_characters")?.max(0) as u64,
                })
            })
            .collect()
    }

    #[tracing::instrument(name = "store::add_tts_characters", level = "debug", skip_all)]
    async fn add_tts_characters(&self, user_id: &UserId, provider: &str, characters: u64) -> Result<()> {
        sqlx::query(
            "INSERT INTO tts_usage (user_id, provider, characters, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, provider) DO UPDATE \
             SET characters = tts_usage.characters + excluded.characters, updated_at = excluded.updated_at",
        )
        .bind(user_id.as_str())
        .bind(provider)
        .bind(characters as i64)
        .bind(reelfarm_domain::id::now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::tts_characters", level = "debug", skip_all)]
    async fn tts_characters(&self, user_id: &UserId) -> Result<Vec<(String, u64)>> {
        let rows = sqlx::query("SELECT provider, characters FROM tts_usage WHERE user_id = $1 ORDER BY provider")
            .bind(user_id.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("provider")?, row.try_get::<i64, _>("characters")?.max(0) as u64)))
            .collect()
    }

    #[tracing::instrument(name = "store::stored_bytes", level = "debug", skip_all)]
    async fn stored_bytes(&self, user_id: &UserId) -> Result<u64> {
        let sql = self.held_bytes_sql();
        let query = sqlx::query(&sql).bind(user_id.as_str()).bind(now_ms() - STALE_UPLOAD_MS);
        let bytes: i64 = query.bind("").fetch_one(&self.pool).await?.try_get("bytes")?;
        Ok(bytes.max(0) as u64)
    }

    #[tracing::instrument(name = "store::reserve_upload", level = "debug", skip_all)]
    async fn reserve_upload(&self, id: &AssetId, attempt: &str, wanted: u64, quota: u64) -> Result<(u64, u64)> {
        let mut tx = self.begin().await?;
        let owner: String = sqlx::query_scalar("SELECT owner_user_id FROM assets WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("object"))?;
        // One owner's reservations are made one at a time, so that what is read below
        // holds until the commit.
        self.one_at_a_time(&mut tx, &format!("uploads:{owner}")).await?;
        let sql = self.held_bytes_sql();
        let query = sqlx::query(&sql).bind(&owner).bind(now_ms() - STALE_UPLOAD_MS);
        let held: i64 = query.bind(id.as_str()).fetch_one(&mut *tx).await?.try_get("bytes")?;
        let held = held.max(0) as u64;
        let reserved = wanted.min(quota.saturating_sub(held));
        sqlx::query(
            "UPDATE assets SET upload_reserved = $1 WHERE id = $2 AND upload_attempt = $3 AND status = 'uploading'",
        )
        .bind(reserved as i64)
        .bind(id.as_str())
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((reserved, held))
    }
}

impl Store {
    /// The bytes the owner `$1` holds: every file of theirs stored, and what their uploads
    /// in progress reserved (those seen since `$2`, Unix ms), but the asset `$3`'s.
    fn held_bytes_sql(&self) -> String {
        format!(
            "SELECT CAST(COALESCE(SUM(COALESCE(a.size, 0) + {} + CASE WHEN a.status = 'uploading' \
             AND a.updated_at >= $2 THEN a.upload_reserved ELSE 0 END), 0) AS BIGINT) AS bytes \
             FROM assets a WHERE a.owner_user_id = $1 AND a.id <> $3",
            self.rendition_bytes()
        )
    }
}
