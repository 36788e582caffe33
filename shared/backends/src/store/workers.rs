//! The workers of the farm: a row per worker process with its counts, so that
//! operators see the fleet and a worker whose renders keep failing where the others'
//! succeed can be taken out of rotation (by itself, or by an operator) and put back.

use reelfarm_domain::id::now_ms;
use sqlx::Row;

use super::{Result, Store, StoreError};
use crate::store::WorkerStore;

/// A worker as the fleet sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRecord {
    pub id: String,
    pub started_at: i64,
    pub seen_at: i64,
    pub renders_ok: i64,
    pub renders_failed: i64,
    pub last_success_at: Option<i64>,
    /// Out of rotation since (Unix ms), and why.
    pub out_since: Option<i64>,
    pub out_reason: Option<String>,
}

impl Store {
    /// The worker `id`, or the only one whose id starts with it.
    async fn find_worker(&self, id: &str) -> Result<WorkerRecord> {
        let pattern = format!("{}%", id.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let rows = sqlx::query(&format!(
            "SELECT {WORKER_COLUMNS} FROM workers WHERE id = $1 OR id LIKE $2 ESCAPE '\\' ORDER BY id = $1 DESC LIMIT 2"
        ))
        .bind(id)
        .bind(pattern)
        .fetch_all(&self.pool)
        .await?;
        match rows.as_slice() {
            [only] => worker_from(only),
            [first, _] if first.try_get::<String, _>("id")? == id => worker_from(first),
            [] => Err(StoreError::NotFound("worker")),
            _ => Err(StoreError::Conflict(format!("more than one worker's id starts with {id:?}"))),
        }
    }
}

impl WorkerStore for Store {
    #[tracing::instrument(name = "store::worker_seen", level = "debug", skip_all)]
    async fn worker_seen(&self, id: &str, started_at: i64, slots: u16) -> Result<bool> {
        let out: Option<i64> = sqlx::query_scalar(
            "INSERT INTO workers (id, started_at, seen_at, slots) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET seen_at = $3, slots = $4 RETURNING out_since",
        )
        .bind(id)
        .bind(started_at)
        .bind(now_ms())
        .bind(i64::from(slots))
        .fetch_one(&self.pool)
        .await?;
        Ok(out.is_some())
    }

    #[tracing::instrument(name = "store::worker_rendered", level = "debug", skip_all)]
    async fn worker_rendered(&self, id: &str, ok: bool) -> Result<()> {
        let sql = if ok {
            "UPDATE workers SET renders_ok = renders_ok + 1, last_success_at = $2 WHERE id = $1"
        } else {
            "UPDATE workers SET renders_failed = renders_failed + 1 WHERE id = $1"
        };
        sqlx::query(sql).bind(id).bind(now_ms()).execute(&self.pool).await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::others_succeeded_since", level = "debug", skip_all)]
    async fn others_succeeded_since(&self, id: &str, since: i64) -> Result<bool> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM workers WHERE id <> $1 AND last_success_at >= $2 LIMIT 1")
                .bind(id)
                .bind(since)
                .fetch_optional(&self.pool)
                .await?;
        Ok(found.is_some())
    }

    #[tracing::instrument(name = "store::set_rotation", level = "debug", skip_all)]
    async fn set_rotation(&self, id: &str, out: Option<&str>) -> Result<WorkerRecord> {
        let worker = self.find_worker(id).await?;
        sqlx::query("UPDATE workers SET out_since = $1, out_reason = $2 WHERE id = $3")
            .bind(out.map(|_| now_ms()))
            .bind(out)
            .bind(&worker.id)
            .execute(&self.pool)
            .await?;
        self.find_worker(&worker.id).await
    }

    #[tracing::instrument(name = "store::workers", level = "debug", skip_all)]
    async fn workers(&self, since: i64) -> Result<Vec<WorkerRecord>> {
        let rows = sqlx::query(&format!(
            "SELECT {WORKER_COLUMNS} FROM workers WHERE seen_at >= $1 OR out_since IS NOT NULL \
             ORDER BY seen_at DESC, id"
        ))
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(worker_from).collect()
    }
}

const WORKER_COLUMNS: &str =
    "id, started_at, seen_at, renders_ok, renders_failed, last_success_at, out_since, out_reason";

fn worker_from(row: &sqlx::any::AnyRow) -> Result<WorkerRecord> {
    Ok(WorkerRecord {
        id: row.try_get("id")?,
        started_at: row.try_get("started_at")?,
        seen_at: row.try_get("seen_at")?,
        renders_ok: row.try_get("renders_ok")?,
        renders_failed: row.try_get("renders_failed")?,
        last_success_at: row.try_get("last_success_at")?,
        out_since: row.try_get("out_since")?,
        out_reason: row.try_get("out_reason")?,
    })
}
