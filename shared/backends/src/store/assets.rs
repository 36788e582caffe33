//! Assets: created by `POST /objects`, uploaded by the signed PUT, converted by workers.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::jobs::{end_conversion, want_conversion};
use super::{flag, id, Result, Store, StoreError};
use crate::store::AssetStore;
use reelfarm_domain::asset::{label_of, Asset, AssetKind, AssetStatus, Conversion};
use reelfarm_domain::id::{new_id, now_ms, AssetId, LibraryId, UserId};

/// How long an upload's heartbeat may be silent before another PUT may take over.
pub const STALE_UPLOAD_MS: i64 = 120_000;

/// Ids asked for in one query of [`AssetStore::assets`] (well under SQLite's and
/// PostgreSQL's limits on bound parameters).
const ASSETS_PER_QUERY: usize = 500;

const COLUMNS: &str = "id, upload_id, library_id, owner_user_id, filename, label, description, status, error, \
    kind, content_type, size, blob_prefix, original_key, duration_ms, alpha, thumb_key, renditions, tags, \
    properties, premium, converted_by, created_at, updated_at";

/// Which assets [`AssetStore::find_assets`](crate::store::AssetStore::find_assets) finds.
#[derive(Debug, Default)]
pub struct AssetQuery<'a> {
    /// In these libraries.
    pub libraries: &'a [LibraryId],
    /// Of these kinds only, when not empty.
    pub kinds: &'a [AssetKind],
    /// Finished converting (usable) only.
    pub ready_only: bool,
    /// Whose label contains this, ignoring case.
    pub text: Option<&'a str>,
    pub limit: u32,
    pub offset: u64,
}

/// A `LIKE` pattern (escape `\`) matching labels that contain `text`, lower-cased.
fn like_pattern(text: &str) -> String {
    let mut pattern = String::from("%");
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("asset {what}: {e}"))
}

fn asset_from(row: &AnyRow) -> Result<Asset> {
    let status: String = row.try_get("status")?;
    let kind: Option<String> = row.try_get("kind")?;
    let renditions: String = row.try_get("renditions")?;
    let tags: String = row.try_get("tags")?;
    let properties: String = row.try_get("properties")?;
    let size: Option<i64> = row.try_get("size")?;
    Ok(Asset {
        id: id(row, "id")?,
        upload_id: row.try_get("upload_id")?,
        library_id: id(row, "library_id")?,
        owner_user_id: id(row, "owner_user_id")?,
        filename: row.try_get("filename")?,
        label: row.try_get("label")?,
        description: row.try_get("description")?,
        status: AssetStatus::parse(&status).ok_or_else(|| corrupt("status", &status))?,
        error: row.try_get("error")?,
        kind: match kind {
            Some(k) => Some(AssetKind::parse(&k).ok_or_else(|| corrupt("kind", &k))?),
            None => None,
        },
        content_type: row.try_get("content_type")?,
        size: size.map(|s| s as u64),
        blob_prefix: row.try_get("blob_prefix")?,
        original_key: row.try_get("original_key")?,
        duration_ms: row.try_get("duration_ms")?,
        alpha: flag(row, "alpha")?,
        thumb_key: row.try_get("thumb_key")?,
        renditions: serde_json::from_str(&renditions).map_err(|e| corrupt("renditions", e))?,
        tags: serde_json::from_str(&tags).map_err(|e| corrupt("tags", e))?,
        properties: serde_json::from_str(&properties).map_err(|e| corrupt("properties", e))?,
        premium: flag(row, "premium")?,
        converted_by: row.try_get("converted_by")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

impl AssetStore for Store {
    #[tracing::instrument(name = "store::create_asset", level = "debug", skip_all)]
    async fn create_asset(&self, library_id: &LibraryId, owner_user_id: &UserId, filename: &str) -> Result<Asset> {
        let id = AssetId::generate();
        let now = now_ms();
        let blob_prefix = format!("assets/{id}/{}", reelfarm_domain::token::random_base62(16));
        sqlx::query(
            "INSERT INTO assets (id, upload_id, library_id, owner_user_id, filename, label, status, blob_prefix, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'created', $7, $8, $8)",
        )
        .bind(id.as_str())
        .bind(new_id())
        .bind(library_id.as_str())
        .bind(owner_user_id.as_str())
        .bind(filename)
        .bind(label_of(filename))
        .bind(&blob_prefix)
        .bind(now)
        .execute(&self.pool)
        .await?;
        self.asset(&id).await
    }

    #[tracing::instrument(name = "store::asset", level = "debug", skip_all)]
    async fn asset(&self, id: &AssetId) -> Result<Asset> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM assets WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("asset"))?;
        asset_from(&row)
    }

    #[tracing::instrument(name = "store::assets", level = "debug", skip_all, fields(ids = ids.len()))]
    async fn assets(&self, ids: &[AssetId]) -> Result<Vec<Asset>> {
        let mut found = Vec::new();
        for chunk in ids.chunks(ASSETS_PER_QUERY) {
            let places: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!("SELECT {COLUMNS} FROM assets WHERE id IN ({})", places.join(", "));
            let query = chunk.iter().fold(sqlx::query(&sql), |query, id| query.bind(id.as_str()));
            for row in query.fetch_all(&self.pool).await? {
                found.push(asset_from(&row)?);
            }
        }
        Ok(found)
    }

    async fn named_asset(&self, name: &str) -> Result<Asset> {
        let id = AssetId::parse(name).ok_or(StoreError::NotFound("asset"))?;
        self.asset(&id).await
    }

    async fn library_assets(&self, library_id: &LibraryId, limit: u32, offset: u64) -> Result<Vec<Asset>> {
        let query = AssetQuery { libraries: std::slice::from_ref(library_id), limit, offset, ..AssetQuery::default() };
        self.find_assets(&query).await
    }

    #[tracing::instrument(name = "store::find_assets", level = "debug", skip_all)]
    async fn find_assets(&self, query: &AssetQuery<'_>) -> Result<Vec<Asset>> {
        if query.libraries.is_empty() {
            return Ok(Vec::new());
        }
        let places: Vec<String> = (1..=query.libraries.len()).map(|i| format!("${i}")).collect();
        let mut sql = format!("SELECT {COLUMNS} FROM assets WHERE library_id IN ({})", places.join(", "));
        let mut next = query.libraries.len();
        let mut place = || {
            next += 1;
            format!("${next}")
        };
        if !query.kinds.is_empty() {
            let kinds: Vec<String> = query.kinds.iter().map(|_| place()).collect();
            sql += &format!(" AND kind IN ({})", kinds.join(", "));
        }
        if query.ready_only {
            sql += " AND status = 'finished'";
        }
        let pattern = query.text.map(str::trim).filter(|t| !t.is_empty()).map(like_pattern);
        if pattern.is_some() {
            sql += &format!(" AND LOWER(label) LIKE {} ESCAPE '\\'", place());
        }
        sql += &format!(" ORDER BY created_at DESC, id DESC LIMIT {} OFFSET {}", place(), place());
        let mut q = sqlx::query(&sql);
        for library in query.libraries {
            q = q.bind(library.as_str());
        }
        for kind in query.kinds {
            q = q.bind(kind.as_str());
        }
        if let Some(pattern) = pattern {
            q = q.bind(pattern);
        }
        let rows = q.bind(i64::from(query.limit)).bind(query.offset as i64).fetch_all(&self.pool).await?;
        rows.iter().map(asset_from).collect()
    }

    #[tracing::instrument(name = "store::rename_asset", level = "debug", skip_all)]
    async fn rename_asset(&self, id: &AssetId, label: &str) -> Result<Asset> {
        let done = sqlx::query("UPDATE assets SET label = $1, updated_at = $2 WHERE id = $3")
            .bind(label)
            .bind(now_ms())
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("asset"));
        }
        self.asset(id).await
    }

    #[tracing::instrument(name = "store::begin_upload", level = "debug", skip_all)]
    async fn begin_upload(&self, id: &AssetId) -> Result<String> {
        let attempt = new_id();
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE assets SET status = 'uploading', upload_attempt = $1, updated_at = $2 \
             WHERE id = $3 AND (status = 'created' OR (status = 'uploading' AND updated_at < $4))",
        )
        .bind(&attempt)
        .bind(now)
        .bind(id.as_str())
        .bind(now - STALE_UPLOAD_MS)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(attempt);
        }
        let asset = self.asset(id).await?;
        Err(StoreError::Conflict(match asset.status {
            AssetStatus::Uploading => "an upload of this object is in progress".into(),
            status => format!("the object was uploaded already (status {})", status.public()),
        }))
    }

    #[tracing::instrument(name = "store::touch_upload", level = "debug", skip_all)]
    async fn touch_upload(&self, id: &AssetId, attempt: &str) -> Result<()> {
        sqlx::query("UPDATE assets SET updated_at = $1 WHERE id = $2 AND upload_attempt = $3 AND status = 'uploading'")
            .bind(now_ms())
            .bind(id.as_str())
            .bind(attempt)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::abort_upload", level = "debug", skip_all)]
    async fn abort_upload(&self, id: &AssetId, attempt: &str) -> Result<()> {
        sqlx::query(
            "UPDATE assets SET status = 'created', upload_attempt = NULL, upload_reserved = 0, updated_at = $1 \
             WHERE id = $2 AND upload_attempt = $3 AND status = 'uploading'",
        )
        .bind(now_ms())
        .bind(id.as_str())
        .bind(attempt)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::finish_upload", level = "debug", skip_all)]
    async fn finish_upload(
        &self,
        id: &AssetId,
        attempt: &str,
        original_key: &str,
        content_type: &str,
        size: u64,
    ) -> Result<Asset> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE assets SET status = 'processing', original_key = $1, content_type = $2, size = $3, updated_at = $4, \
             upload_reserved = 0 WHERE id = $5 AND upload_attempt = $6 AND status = 'uploading'",
        )
        .bind(original_key)
        .bind(content_type)
        .bind(size as i64)
        .bind(now_ms())
        .bind(id.as_str())
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Err(StoreError::Conflict("the object is no longer awaiting its upload".into()));
        }
        let owner: String = sqlx::query_scalar("SELECT owner_user_id FROM assets WHERE id = $1")
            .bind(id.as_str())
            .fetch_one(&mut *tx)
            .await?;
        want_conversion(&mut tx, id, &UserId::trusted(owner), size).await?;
        tx.commit().await?;
        self.outbox_written();
        self.asset(id).await
    }

    #[tracing::instrument(name = "store::finish_conversion", level = "debug", skip_all)]
    async fn finish_conversion(&self, id: &AssetId, attempt: i64, c: &Conversion) -> Result<bool> {
        let renditions = serde_json::to_string(&c.renditions).expect("renditions serialize");
        let mut tx = self.begin().await?;
        if !end_conversion(&mut tx, id, attempt).await? {
            return Ok(false);
        }
        let done = sqlx::query(
            "UPDATE assets SET status = 'finished', error = NULL, kind = $1, duration_ms = $2, alpha = $3, \
             thumb_key = $4, renditions = $5, updated_at = $6, converted_by = $8 \
             WHERE id = $7 AND status = 'processing'",
        )
        .bind(c.kind.as_str())
        .bind(c.duration_ms)
        .bind(i64::from(c.alpha))
        .bind(&c.thumb_key)
        .bind(renditions)
        .bind(now_ms())
        .bind(id.as_str())
        .bind(&c.worker)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::fail_conversion", level = "debug", skip_all)]
    async fn fail_conversion(&self, id: &AssetId, attempt: i64, error: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        if !end_conversion(&mut tx, id, attempt).await? {
            return Ok(false);
        }
        let done = sqlx::query(
            "UPDATE assets SET status = 'failed', error = $1, updated_at = $2 WHERE id = $3 AND status = 'processing'",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::delete_asset", level = "debug", skip_all)]
    async fn delete_asset(&self, id: &AssetId) -> Result<Asset> {
        let asset = self.asset(id).await?;
        sqlx::query("DELETE FROM assets WHERE id = $1").bind(id.as_str()).execute(&self.pool).await?;
        Ok(asset)
    }
}
