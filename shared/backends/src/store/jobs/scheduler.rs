//! The scheduler: which unit of work a worker takes next. Units are renders rendered
//! whole, the parts of split renders, the thumbs and previews of saved templates and the
//! conversions of uploads; each counts in its account's share what it costs (its estimate,
//! or the time it has taken when that is more) and, for an hour after, what it used; each
//! is claimed for a lease its worker extends, goes back to `pending` after a failed attempt
//! and is claimed again when its worker died.

use std::time::Duration;

use reelfarm_domain::id::{now_ms, AssetId, TemplateId, UserId};
use reelfarm_domain::message::Message;
use reelfarm_domain::priority::Priority;
use reelfarm_domain::status::RenderStatus;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::credits::ACCOUNT_OF_USER_2;
use super::parts::{part_from, PART_COLUMNS};
use super::{render_from, PartRecord, RenderRecord, RENDER_COLUMNS};
use crate::store::{outbox, Dialect, Result, SchedulerStore, Store, StoreError};

/// A unit of work claimed by a worker ([`SchedulerStore::claim_work`](crate::store::SchedulerStore::claim_work)).
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// A render, or a part of a split one.
    Render(Box<Claim>),
    /// The thumb and preview of a saved template's version.
    TemplateMedia(MediaClaim),
    /// The conversion of an uploaded original into its renditions.
    Conversion(ConversionClaim),
}

impl Work {
    /// The render claimed, if it is one.
    pub fn into_render(self) -> Option<Claim> {
        match self {
            Work::Render(claim) => Some(*claim),
            Work::TemplateMedia(_) | Work::Conversion(_) => None,
        }
    }

    /// The account whose share the unit counts in.
    pub fn account(&self) -> &str {
        match self {
            Work::Render(claim) => &claim.account,
            Work::TemplateMedia(claim) => &claim.account,
            Work::Conversion(claim) => &claim.account,
        }
    }

    /// The kind of unit, as [`SchedulerStore::record_use`](crate::store::SchedulerStore::record_use) files it.
    pub fn kind(&self) -> &'static str {
        match self {
            Work::Render(claim) if claim.part.is_some() => "part",
            Work::Render(_) => "render",
            Work::TemplateMedia(_) => "media",
            Work::Conversion(_) => "conversion",
        }
    }
}

/// Which units a claim takes: a worker's render slots take renders, their parts and
/// templates' media; its conversion slots take conversions. Both count every unit of an
/// account in its share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    Renders,
    Conversions,
}

impl Pool {
    /// The condition on `units u` of the units of this pool.
    fn units(self) -> &'static str {
        match self {
            Pool::Renders => "u.kind <> 'conversion'",
            Pool::Conversions => "u.kind = 'conversion'",
        }
    }
}

/// A render, or a part of one, claimed by a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// As it is now: `started`; when claimed whole, by the claiming worker with this
    /// attempt counted.
    pub render: RenderRecord,
    /// An earlier attempt (of the part, when one) was interrupted (its worker stopped
    /// while rendering).
    pub interrupted: bool,
    /// The part of the split render claimed, with this attempt counted.
    pub part: Option<PartRecord>,
    /// A long unit of work ([`NewRender::long_unit`](super::NewRender::long_unit)).
    pub long_unit: bool,
    /// The account whose share it counts in.
    pub account: String,
}

/// The thumb and preview of a template version, claimed by a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaClaim {
    pub template_id: TemplateId,
    pub version: i64,
    /// This attempt's number.
    pub attempts: i64,
    /// An earlier attempt was interrupted.
    pub interrupted: bool,
    pub account: String,
}

/// The conversion of an uploaded original, claimed by a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionClaim {
    pub asset_id: AssetId,
    /// This attempt's number.
    pub attempts: i64,
    /// An earlier attempt was interrupted (its worker stopped while converting).
    pub interrupted: bool,
    pub account: String,
}

/// Who claims, and for how long.
struct Taker<'a> {
    worker: &'a str,
    now: i64,
    lease: Duration,
}

/// A table of units: how one of its rows is named (`$n`, and `$n+1` for a part) and
/// what claiming it also sets (`$2` is the time of the claim).
struct Units {
    table: &'static str,
    key: fn(usize) -> String,
    also: &'static str,
    columns: &'static str,
}

const WHOLE: Units = Units { table: "renders", key: whole_key, also: ", started_at = $2", columns: RENDER_COLUMNS };
const PARTS: Units = Units { table: "render_parts", key: part_key, also: ", claimed_at = $2", columns: PART_COLUMNS };
const MEDIA: Units = Units {
    table: "template_media",
    key: media_key,
    also: ", claimed_at = $2",
    columns: "template_id, version, attempts",
};
const CONVERSIONS: Units =
    Units { table: "conversions", key: conversion_key, also: ", claimed_at = $2", columns: "asset_id, attempts" };

fn whole_key(n: usize) -> String {
    format!("id = ${n} AND parts = 0")
}

fn part_key(n: usize) -> String {
    format!("render_id = ${n} AND part = ${}", n + 1)
}

fn media_key(n: usize) -> String {
    format!("template_id = ${n}")
}

fn conversion_key(n: usize) -> String {
    format!("asset_id = ${n}")
}

impl Store {
    /// Takes the unit of `units` named by `id` (and `part`) for `taker` when it is still
    /// claimable and nobody else is taking it: `started`, its attempt counted, leased. Its
    /// columns as they are then.
    async fn take(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        units: &Units,
        id: &str,
        part: Option<i64>,
        taker: &Taker<'_>,
    ) -> Result<Option<AnyRow>> {
        let Units { table, key, also, columns } = units;
        let (id_key, lock) = (key(2), self.skip_locked());
        let free = format!("SELECT 1 FROM {table} WHERE {id_key} AND {} {lock}", ready(table));
        let free = sqlx::query(&free).bind(taker.now).bind(id);
        let free = match part {
            Some(part) => free.bind(part),
            None => free,
        };
        if free.fetch_optional(&mut **tx).await?.is_none() {
            return Ok(None);
        }
        let take = format!(
            "UPDATE {table} SET status = 'started', attempts = attempts + 1, worker = $1, lease_until = $2 + $3{also} \
             WHERE {} RETURNING {columns}",
            key(4)
        );
        let take = sqlx::query(&take).bind(taker.worker).bind(taker.now).bind(taker.lease.as_millis() as i64).bind(id);
        let take = match part {
            Some(part) => take.bind(part),
            None => take,
        };
        Ok(Some(take.fetch_one(&mut **tx).await?))
    }

    /// `FOR UPDATE SKIP LOCKED` where the database has it (SQLite's writers take turns).
    fn skip_locked(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        }
    }

    /// Sets `set` (`$1` is `value`) on the row of `claimed` while its attempt holds it;
    /// whether it did.
    async fn update_held(&self, claimed: &MediaClaim, set: &str, value: i64) -> Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE template_media SET {set} WHERE template_id = $2 AND version = $3 AND attempts = $4 \
             AND status = 'started'"
        ))
        .bind(value)
        .bind(claimed.template_id.as_str())
        .bind(claimed.version)
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

impl SchedulerStore for Store {
    #[tracing::instrument(name = "store::claim_work", level = "debug", skip_all)]
    async fn claim_work(&self, worker: &str, lease: Duration, long_units: bool, pool: Pool) -> Result<Option<Work>> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        let (ready, in_pool) = (ready("u"), pool.units());
        // A unit under way weighs its estimate, or the time it has taken when that is
        // more (a slow source, an estimate that erred); what ended counts for an hour,
        // less and less.
        let accounts = sqlx::query(&format!(
            "{} SELECT u.account, MAX(CASE WHEN {ready} AND {in_pool} THEN u.priority END) AS top, \
             MIN(CASE WHEN {ready} AND {in_pool} THEN u.created_at END) AS oldest, \
             CAST(SUM(CASE WHEN u.status = 'started' AND u.lease_until > $1 THEN \
             CASE WHEN $1 - COALESCE(u.claimed_at, $1) > u.cost THEN $1 - u.claimed_at ELSE u.cost END \
             ELSE 0 END) AS BIGINT) AS running, \
             CAST(COALESCE(MAX({}), 0) AS BIGINT) AS used, \
             COALESCE(MAX(s.weight), 1) AS weight, COALESCE(MAX(c.claimed_at), 0) AS served \
             FROM units u LEFT JOIN account_shares s ON s.account = u.account \
             LEFT JOIN account_claims c ON c.account = u.account GROUP BY u.account",
            &*UNITS,
            faded_use("c", "$1", "$2")
        ))
        .bind(now)
        .bind(USAGE_WINDOW_MS)
        .fetch_all(&mut *tx)
        .await?;
        let mut queue = Vec::with_capacity(accounts.len());
        for row in &accounts {
            if row.try_get::<Option<i64>, _>("top")?.is_none() {
                continue;
            }
            queue.push(Share {
                account: row.try_get("account")?,
                running: row.try_get::<i64, _>("running")? + row.try_get::<i64, _>("used")?,
                weight: row.try_get::<i64, _>("weight")?.max(1),
                served: row.try_get("served")?,
                oldest: row.try_get::<Option<i64>, _>("oldest")?.unwrap_or(now),
            });
        }
        queue.sort_by(Share::order);
        let taker = Taker { worker, now, lease };
        for share in &queue {
            // A few candidates: another worker may be taking the first ones right now.
            // A split render's sound is one long piece of work (all of its length): an
            // account mixes one at a time, so that its other slots go to chunks, which end
            // soon and let other accounts in.
            let candidates = sqlx::query(&format!(
                "{} SELECT u.id, u.part, u.status, u.long_unit FROM units u WHERE u.account = $2 AND {ready} \
                 AND {in_pool} AND (u.long_unit = 0 OR $3 = 1) \
                 AND NOT (u.kind = 'sound' AND EXISTS (SELECT 1 FROM units s WHERE s.account = $2 \
                 AND s.kind = 'sound' AND s.status = 'started' AND s.lease_until > $1)) \
                 ORDER BY u.priority DESC, u.created_at, u.job_id, u.position, u.part LIMIT 4",
                &*UNITS
            ))
            .bind(now)
            .bind(&share.account)
            .bind(i64::from(long_units))
            .fetch_all(&mut *tx)
            .await?;
            for candidate in candidates {
                let (id, part, was): (String, i64, String) =
                    (candidate.try_get("id")?, candidate.try_get("part")?, candidate.try_get("status")?);
                let interrupted = was == RenderStatus::Started.as_str();
                let long_unit = candidate.try_get::<i64, _>("long_unit")? == 1;
                let account = share.account.clone();
                let work = match part {
                    CONVERSION_PART => self.take(&mut tx, &CONVERSIONS, &id, None, &taker).await?.map(|row| {
                        Ok::<_, StoreError>(Work::Conversion(ConversionClaim {
                            asset_id: crate::store::id(&row, "asset_id")?,
                            attempts: row.try_get("attempts")?,
                            interrupted,
                            account,
                        }))
                    }),
                    MEDIA_PART => self.take(&mut tx, &MEDIA, &id, None, &taker).await?.map(|row| {
                        Ok::<_, StoreError>(Work::TemplateMedia(MediaClaim {
                            template_id: crate::store::id(&row, "template_id")?,
                            version: row.try_get("version")?,
                            attempts: row.try_get("attempts")?,
                            interrupted,
                            account,
                        }))
                    }),
                    WHOLE_PART => self.take(&mut tx, &WHOLE, &id, None, &taker).await?.map(|row| {
                        Ok::<_, StoreError>(Work::Render(Box::new(Claim {
                            render: render_from(&row)?,
                            interrupted,
                            part: None,
                            long_unit,
                            account,
                        })))
                    }),
                    part => match self.take(&mut tx, &PARTS, &id, Some(part), &taker).await? {
                        Some(row) => {
                            let render = sqlx::query(&format!("SELECT {RENDER_COLUMNS} FROM renders WHERE id = $1"))
                                .bind(&id)
                                .fetch_one(&mut *tx)
                                .await?;
                            Some(Ok(Work::Render(Box::new(Claim {
                                render: render_from(&render)?,
                                interrupted,
                                part: Some(part_from(&row)?),
                                long_unit,
                                account,
                            }))))
                        }
                        None => None,
                    },
                };
                let Some(work) = work.transpose()? else { continue };
                sqlx::query(
                    "INSERT INTO account_claims (account, claimed_at) VALUES ($1, $2) \
                     ON CONFLICT (account) DO UPDATE SET claimed_at = $2",
                )
                .bind(&share.account)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(Some(work));
            }
        }
        tx.rollback().await?;
        Ok(None)
    }

    #[tracing::instrument(name = "store::next_claim_at", level = "debug", skip_all)]
    async fn next_claim_at(&self, pool: Pool) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar(&format!(
            "{} SELECT MIN(CASE WHEN u.status = 'pending' THEN u.not_before ELSE COALESCE(u.lease_until, 0) END) \
             FROM units u WHERE {}",
            &*UNITS,
            pool.units()
        ))
        .fetch_one(&self.pool)
        .await?)
    }

    #[tracing::instrument(name = "store::record_use", level = "debug", skip_all)]
    async fn record_use(&self, account: &str, kind: &str, used_ms: i64) -> Result<()> {
        let (now, used_ms) = (now_ms(), used_ms.max(0));
        // What the account used lately fades as the share reads it, then this is added.
        sqlx::query(&format!(
            "INSERT INTO account_claims (account, claimed_at, used_ms, used_at) VALUES ($1, 0, $2, $3) \
             ON CONFLICT (account) DO UPDATE SET used_ms = $2 + {}, used_at = $3",
            faded_use("account_claims", "$3", "$4")
        ))
        .bind(account)
        .bind(used_ms)
        .bind(now)
        .bind(USAGE_WINDOW_MS)
        .execute(&self.pool)
        .await?;
        if kind == "conversion" {
            sqlx::query("INSERT INTO work_used (account, kind, ended_at, used_ms) VALUES ($1, $2, $3, $4)")
                .bind(account)
                .bind(kind)
                .bind(now)
                .bind(used_ms)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    #[tracing::instrument(name = "store::heartbeat_conversion", level = "debug", skip_all)]
    async fn heartbeat_conversion(&self, claimed: &ConversionClaim, lease: Duration) -> Result<bool> {
        self.heartbeat_conversion_row(claimed, lease).await
    }

    #[tracing::instrument(name = "store::release_conversion", level = "debug", skip_all)]
    async fn release_conversion(&self, claimed: &ConversionClaim, retry_at: i64) -> Result<()> {
        self.release_conversion_row(claimed, retry_at).await
    }

    #[tracing::instrument(name = "store::conversions_used", level = "debug", skip_all)]
    async fn conversions_used(&self, user: &UserId, since: i64) -> Result<i64> {
        self.conversions_used_ms(user, since).await
    }

    #[tracing::instrument(name = "store::spare_slots", level = "debug", skip_all)]
    async fn spare_slots(&self, seen_since: i64) -> Result<i64> {
        Ok(sqlx::query_scalar(&format!(
            "{} SELECT CAST((SELECT COALESCE(SUM(slots), 0) FROM workers WHERE seen_at >= $1 AND out_since IS NULL) \
             - (SELECT COUNT(*) FROM units u WHERE u.kind <> 'conversion' AND ((u.status = 'started' \
             AND u.lease_until > $2) OR (u.status = 'pending' AND u.not_before <= $2))) AS BIGINT)",
            &*UNITS
        ))
        .bind(seen_since)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await?)
    }

    #[tracing::instrument(name = "store::heartbeat_media", level = "debug", skip_all)]
    async fn heartbeat_media(&self, claimed: &MediaClaim, lease: Duration) -> Result<bool> {
        self.update_held(claimed, "lease_until = $1", now_ms() + lease.as_millis() as i64).await
    }

    #[tracing::instrument(name = "store::release_media", level = "debug", skip_all)]
    async fn release_media(&self, claimed: &MediaClaim, retry_at: i64) -> Result<()> {
        self.update_held(claimed, "status = 'pending', not_before = $1, lease_until = NULL", retry_at).await.map(drop)
    }

    #[tracing::instrument(name = "store::end_media", level = "debug", skip_all)]
    async fn end_media(&self, claimed: &MediaClaim) -> Result<bool> {
        let done = sqlx::query("DELETE FROM template_media WHERE template_id = $1 AND version = $2 AND attempts = $3")
            .bind(claimed.template_id.as_str())
            .bind(claimed.version)
            .bind(claimed.attempts)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// Asks for the thumb and preview of `version` of template `id`, saved by `user`, whose
/// making is estimated at `cost_ms`: a unit in the user's account, replacing the one the
/// template waited for (a later save wins), and a `template_media.v1` token to claim it.
pub(crate) async fn want_template_media(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &TemplateId,
    version: i64,
    user: &UserId,
    cost_ms: i64,
) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO template_media (template_id, version, account, cost_ms, created_at) \
         VALUES ($1, $3, {ACCOUNT_OF_USER_2}, $4, $5) \
         ON CONFLICT (template_id) DO UPDATE SET version = $3, account = excluded.account, status = 'pending', \
         attempts = 0, worker = NULL, lease_until = NULL, not_before = 0, cost_ms = $4, created_at = $5"
    ))
    .bind(id.as_str())
    .bind(user.as_str())
    .bind(version)
    .bind(cost_ms.max(1))
    .bind(now_ms())
    .execute(&mut **tx)
    .await?;
    let token = Message::TemplateMediaV1 { template_id: id.clone(), version };
    outbox::enqueue(tx, &crate::trace::envelope(token)).await
}

/// `alias`'s unit can be claimed at `$1`: pending past its retry time, or started with its
/// lease run out.
pub(super) fn ready(alias: &str) -> String {
    format!(
        "(({alias}.status = 'pending' AND {alias}.not_before <= $1) \
         OR ({alias}.status = 'started' AND COALESCE({alias}.lease_until, 0) <= $1))"
    )
}

/// `units.part` of a render rendered whole, of a template's media and of a conversion.
const WHOLE_PART: i64 = -1;
const MEDIA_PART: i64 = -2;
const CONVERSION_PART: i64 = -3;

/// How long what a unit used counts in its account's share after it ended: fully at
/// first, then less and less, nothing after this (each account's use is one figure,
/// faded as it is read and as more is added).
pub const USAGE_WINDOW_MS: i64 = 600_000;

/// What `alias`'s use (`account_claims`) is at `now`: its `used_ms` faded linearly from
/// `used_at` to nothing after `window` (SQL placeholders or columns).
fn faded_use(alias: &str, now: &str, window: &str) -> String {
    format!(
        "CASE WHEN {now} - {alias}.used_at >= {window} THEN 0 \
         ELSE {alias}.used_ms * ({window} - ({now} - {alias}.used_at)) / {window} END"
    )
}

/// What the scheduler hands out, as `units`: the open renders rendered whole (`part` -1),
/// the open parts of split renders, each with its render's account and order (a join only
/// once every other part of its render is done), the template media waiting (`part` -2)
/// and the conversions waiting (`part` -3), both ranked with their account's drafts.
static UNITS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH units AS (\
    SELECT r.id, CAST({WHOLE_PART} AS BIGINT) AS part, r.account, r.priority, r.created_at, r.job_id, r.position, r.status, \
    r.not_before, r.lease_until, r.cost_ms AS cost, 'whole' AS kind, r.long_unit, r.started_at AS claimed_at FROM renders r \
    WHERE r.status IN ('pending', 'started') AND r.parts = 0 \
    UNION ALL \
    SELECT p.render_id, p.part, r.account, r.priority, r.created_at, r.job_id, r.position, p.status, \
    p.not_before, p.lease_until, r.cost_ms / r.parts AS cost, p.kind, CAST(0 AS BIGINT), p.claimed_at FROM render_parts p \
    JOIN renders r ON r.id = p.render_id \
    WHERE r.status = 'started' AND p.status IN ('pending', 'started') AND (p.kind <> 'join' OR NOT EXISTS \
    (SELECT 1 FROM render_parts q WHERE q.render_id = p.render_id AND q.kind <> 'join' AND q.status <> 'done')) \
    UNION ALL \
    SELECT m.template_id, CAST({MEDIA_PART} AS BIGINT), m.account, CAST({rank} AS BIGINT), m.created_at, '', \
    CAST(0 AS BIGINT), m.status, m.not_before, m.lease_until, m.cost_ms, 'media', CAST(0 AS BIGINT), m.claimed_at \
    FROM template_media m \
    UNION ALL \
    SELECT c.asset_id, CAST({CONVERSION_PART} AS BIGINT), c.account, CAST({rank} AS BIGINT), c.created_at, '', \
    CAST(0 AS BIGINT), c.status, c.not_before, c.lease_until, c.cost_ms, 'conversion', CAST(0 AS BIGINT), c.claimed_at \
    FROM conversions c)",
        rank = Priority::DRAFT_RANK
    )
});

/// An account with claimable units, as the scheduler weighs it.
struct Share {
    account: String,
    /// Milliseconds of its units being worked on (each its estimate, or its time so far
    /// when more) and of those that ended, fading ([`USAGE_WINDOW_MS`]).
    running: i64,
    weight: i64,
    /// When it last had a unit claimed (0: never).
    served: i64,
    /// When its oldest claimable unit was made.
    oldest: i64,
}

impl Share {
    /// The smallest share in use (`running / weight`, compared without division), then
    /// the one served longest ago, then the longest waiting.
    fn order(a: &Share, b: &Share) -> std::cmp::Ordering {
        let share = |x: &Share, y: &Share| i128::from(x.running) * i128::from(y.weight);
        share(a, b).cmp(&share(b, a)).then_with(|| a.served.cmp(&b.served)).then_with(|| a.oldest.cmp(&b.oldest))
    }
}
