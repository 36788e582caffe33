//! The parts of a split render: a render longer than the split threshold is
//! split by the worker that claimed it into chunks of frames, its sound and their join.
//! Parts are claimed through [`SchedulerStore::claim_work`](crate::store::SchedulerStore::claim_work) like renders (counted in their
//! account's share), hold a lease their worker extends, go back to `pending` after a
//! failed attempt and are retried alone; the join, claimable once every other part is
//! done, ends the render.

use std::time::Duration;

use reelfarm_domain::id::{now_ms, RenderId};
use reelfarm_domain::message::Message;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::renders::Guard;
use super::{RenderOutcome, RenderRecord};
use crate::store::{outbox, PartStore, Result, Store, StoreError};

pub(super) const PART_COLUMNS: &str = "render_id, part, kind, first_frame, end_frame, status, attempts, worker";

/// What a part makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// The frames [`PartRecord::first_frame`, `end_frame`) as a video-only file.
    Frames,
    /// The whole sound.
    Sound,
    /// The video from the other parts' files.
    Join,
}

impl PartKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Frames => "frames",
            PartKind::Sound => "sound",
            PartKind::Join => "join",
        }
    }

    fn parse(s: &str) -> Result<PartKind> {
        match s {
            "frames" => Ok(PartKind::Frames),
            "sound" => Ok(PartKind::Sound),
            "join" => Ok(PartKind::Join),
            other => Err(StoreError::Corrupt(format!("unknown part kind {other:?}"))),
        }
    }
}

/// A part of a split render, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PartRecord {
    pub render_id: RenderId,
    /// Its number within the render (the order they are taken in).
    pub part: i64,
    pub kind: PartKind,
    pub first_frame: i64,
    pub end_frame: i64,
    /// `pending`, `started` or `done`.
    pub status: String,
    pub attempts: i64,
    pub worker: Option<String>,
}

pub(super) fn part_from(row: &AnyRow) -> Result<PartRecord> {
    Ok(PartRecord {
        render_id: RenderId::trusted(row.try_get::<String, _>("render_id")?),
        part: row.try_get("part")?,
        kind: PartKind::parse(&row.try_get::<String, _>("kind")?)?,
        first_frame: row.try_get("first_frame")?,
        end_frame: row.try_get("end_frame")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        worker: row.try_get("worker")?,
    })
}

impl PartStore for Store {
    #[tracing::instrument(name = "store::split_render", level = "debug", skip_all)]
    async fn split_render(&self, claimed: &RenderRecord, parts: &[(PartKind, i64, i64)]) -> Result<bool> {
        let mut tx = self.begin().await?;
        let split = sqlx::query(
            "UPDATE renders SET parts = $1, lease_until = NULL \
             WHERE id = $2 AND status = 'started' AND attempts = $3 AND parts = 0",
        )
        .bind(parts.len() as i64)
        .bind(claimed.id.as_str())
        .bind(claimed.attempts)
        .execute(&mut *tx)
        .await?;
        if split.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        for (i, (kind, first, end)) in parts.iter().enumerate() {
            sqlx::query(
                "INSERT INTO render_parts (render_id, part, kind, first_frame, end_frame) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(claimed.id.as_str())
            .bind(i as i64)
            .bind(kind.as_str())
            .bind(*first)
            .bind(*end)
            .execute(&mut *tx)
            .await?;
        }
        for _ in 1..parts.len() {
            let token = crate::trace::envelope(Message::RenderV1 { render_id: claimed.id.clone() });
            outbox::enqueue(&mut tx, &token).await?;
        }
        tx.commit().await?;
        self.outbox_written();
        Ok(true)
    }

    #[tracing::instrument(name = "store::render_parts", level = "debug", skip_all)]
    async fn render_parts(&self, id: &RenderId) -> Result<Vec<PartRecord>> {
        let rows = sqlx::query(&format!("SELECT {PART_COLUMNS} FROM render_parts WHERE render_id = $1 ORDER BY part"))
            .bind(id.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(part_from).collect()
    }

    #[tracing::instrument(name = "store::heartbeat_part", level = "debug", skip_all)]
    async fn heartbeat_part(&self, claimed: &PartRecord, lease: Duration) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE render_parts SET lease_until = $1 WHERE render_id = $2 AND part = $3 AND status = 'started' \
             AND attempts = $4 AND EXISTS (SELECT 1 FROM renders WHERE id = $2 AND status = 'started')",
        )
        .bind(now_ms() + lease.as_millis() as i64)
        .bind(claimed.render_id.as_str())
        .bind(claimed.part)
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::release_part", level = "debug", skip_all)]
    async fn release_part(&self, claimed: &PartRecord, retry_at: i64) -> Result<()> {
        sqlx::query(
            "UPDATE render_parts SET status = 'pending', not_before = $1, lease_until = NULL \
             WHERE render_id = $2 AND part = $3 AND status = 'started' AND attempts = $4",
        )
        .bind(retry_at)
        .bind(claimed.render_id.as_str())
        .bind(claimed.part)
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::finish_part", level = "debug", skip_all)]
    async fn finish_part(&self, claimed: &PartRecord) -> Result<Option<(i64, i64)>> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE render_parts SET status = 'done', lease_until = NULL WHERE render_id = $1 AND part = $2 \
             AND status = 'started' AND attempts = $3 AND kind <> 'join' \
             AND EXISTS (SELECT 1 FROM renders WHERE id = $1 AND status = 'started')",
        )
        .bind(claimed.render_id.as_str())
        .bind(claimed.part)
        .bind(claimed.attempts)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        let row = sqlx::query(
            "SELECT SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done, COUNT(*) AS parts \
             FROM render_parts WHERE render_id = $1",
        )
        .bind(claimed.render_id.as_str())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some((row.try_get::<Option<i64>, _>("done")?.unwrap_or(0), row.try_get("parts")?)))
    }

    async fn end_joined(&self, claimed: &PartRecord, outcome: &RenderOutcome) -> Result<bool> {
        if claimed.kind != PartKind::Join {
            return Err(StoreError::Corrupt(format!("part {} of {} is no join", claimed.part, claimed.render_id)));
        }
        self.end(&claimed.render_id, Guard::Join(claimed), outcome).await
    }
}
