//! Jobs, their renders (job videos), the projects they create, credits and idempotency
//! keys of job requests.
//!
//! A job is written in one transaction: its idempotency key, the credit debit (one
//! conditional update: never read-then-write), the job, its renders, its projects and one
//! `render.v1` outbox row per render. A render ends in one transaction too: its outcome,
//! the refund of a failed render's credit, the job's own status and the
//! `render_finished.v1` event for the notifier.

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::{
    flag, id, is_unique_violation, missing_reference, optional_id, outbox, Dialect, Result, Store, StoreError,
};
use reelfarm_domain::id::{JobId, ProjectId, TemplateId, UserId};
use reelfarm_domain::message::{Message, Queue};
use reelfarm_domain::output::Output;
use reelfarm_domain::status::{JobStatus, RenderStatus};

use crate::store::{parse_status, JobStore};

mod conversions;
mod credits;
mod parts;
mod renders;
mod scheduler;
mod shares;
mod types;

use credits::{CreditAccount, ACCOUNT_OF_USER_2};

pub(super) use conversions::{end_conversion, want_conversion};
pub use parts::{PartKind, PartRecord};
pub use reelfarm_domain::job::{JobRecord, NewJob, NewRender, ProjectRecord, RenderOutcome, RenderRecord, SoundLevel};
pub use renders::CANCELLED_ERROR;
pub(super) use scheduler::want_template_media;
pub use scheduler::{Claim, ConversionClaim, MediaClaim, Pool, Work, USAGE_WINDOW_MS};
pub use shares::AccountShare;
pub use types::{Idempotency, JobCreation, IDEMPOTENCY_TTL_MS};

const JOB_COLUMNS: &str =
    "id, user_id, template_id, status, quality, create_render, create_project, notifications, created_at, finished_at, \
    template_version, draft, priority, output";
const RENDER_COLUMNS: &str = "id, job_id, position, external_id, title, metadata, template_variables, status, error, \
    project_id, video_key, thumb_key, width, height, duration_ms, attempts, worker, created_at, started_at, finished_at, \
    captions_key, loudness_milli, true_peak_milli";
const PROJECT_COLUMNS: &str = "id, user_id, template_id, job_id, render_id, title, json, created_at";
/// The columns of a new render row, in the order [`bind_render`] binds them.
const NEW_RENDER_COLUMNS: &str =
    "id, job_id, position, external_id, title, metadata, template_variables, status, charged, project_id, created_at, finished_at, \
    priority, cost_ms, video_ms, long_unit";

type AnyQuery<'q> = sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>;

/// Binds `$1`–`$15` of a job's insert: its [`JOB_COLUMNS`] (as `record` says; `$12` to
/// `$15` are the last four, the template version, the draft flag, the priority and the
/// output) and, as `$11`, the credits it `charges`.
fn bind_job<'q>(query: AnyQuery<'q>, job: &'q NewJob, record: &'q JobRecord, charges: i64) -> AnyQuery<'q> {
    query
        .bind(job.id.as_str())
        .bind(job.user_id.as_str())
        .bind(job.template_id.as_str())
        .bind(record.status.as_str())
        .bind(job.quality.as_str())
        .bind(i64::from(job.create_render))
        .bind(i64::from(job.create_project))
        .bind(to_json(&job.notifications))
        .bind(job.created_at)
        .bind(record.finished_at)
        .bind(charges)
        .bind(job.template_version)
        .bind(i64::from(job.draft))
        .bind(job.priority.as_str())
        .bind(job.output.to_json())
}

/// Binds the [`NEW_RENDER_COLUMNS`] of `render` (as `stored` by `JobRecord::from_new`).
fn bind_render<'q>(
    query: AnyQuery<'q>,
    job: &'q NewJob,
    render: &'q NewRender,
    stored: &'q RenderRecord,
) -> AnyQuery<'q> {
    query
        .bind(render.id.as_str())
        .bind(job.id.as_str())
        .bind(stored.position)
        .bind(&render.external_id)
        .bind(&render.title)
        .bind(to_json(&render.metadata))
        .bind(to_json(&render.template_variables))
        .bind(stored.status.as_str())
        .bind(if job.charges() > 0 { render.credits } else { 0 })
        .bind(stored.project_id.as_ref().map(ProjectId::as_str))
        .bind(job.created_at)
        .bind(stored.finished_at)
        .bind(job.rank())
        .bind(render.cost_ms.max(1))
        .bind(render.video_ms.max(0))
        .bind(i64::from(render.long_unit))
}

/// Binds the [`PROJECT_COLUMNS`] of the project created with `render`.
fn bind_project<'q>(
    query: AnyQuery<'q>,
    job: &'q NewJob,
    render: &'q NewRender,
    id: &'q ProjectId,
    json: &'q str,
) -> AnyQuery<'q> {
    query
        .bind(id.as_str())
        .bind(job.user_id.as_str())
        .bind(job.template_id.as_str())
        .bind(job.id.as_str())
        .bind(render.id.as_str())
        .bind(&render.title)
        .bind(json)
        .bind(job.created_at)
}

/// `value` as the JSON text a column holds.
fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("records serialize")
}

/// The JSON in text column `column`.
fn json_column<T: serde::de::DeserializeOwned>(row: &AnyRow, column: &str) -> Result<T> {
    let text: String = row.try_get(column)?;
    serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
}

fn job_from(row: &AnyRow) -> Result<JobRecord> {
    Ok(JobRecord {
        id: id(row, "id")?,
        user_id: id(row, "user_id")?,
        template_id: id(row, "template_id")?,
        status: parse_status(JobStatus::parse, "job", row.try_get("status")?)?,
        quality: {
            let quality: String = row.try_get("quality")?;
            quality.parse().map_err(|e| StoreError::Corrupt(format!("job quality: {e}")))?
        },
        create_render: flag(row, "create_render")?,
        create_project: flag(row, "create_project")?,
        notifications: json_column(row, "notifications")?,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
        template_version: row.try_get("template_version")?,
        draft: flag(row, "draft")?,
        priority: {
            let priority: String = row.try_get("priority")?;
            priority.parse().map_err(|e| StoreError::Corrupt(format!("job priority: {e}")))?
        },
        output: {
            let output: String = row.try_get("output")?;
            Output::from_json(&output).map_err(StoreError::Corrupt)?
        },
        renders: Vec::new(),
    })
}

fn render_from(row: &AnyRow) -> Result<RenderRecord> {
    Ok(RenderRecord {
        id: id(row, "id")?,
        job_id: id(row, "job_id")?,
        position: row.try_get("position")?,
        external_id: row.try_get("external_id")?,
        title: row.try_get("title")?,
        metadata: json_column(row, "metadata")?,
        template_variables: json_column(row, "template_variables")?,
        status: parse_status(RenderStatus::parse, "render", row.try_get("status")?)?,
        error: row.try_get("error")?,
        project_id: optional_id(row, "project_id")?,
        video_key: row.try_get("video_key")?,
        thumb_key: row.try_get("thumb_key")?,
        width: row.try_get("width")?,
        height: row.try_get("height")?,
        duration_ms: row.try_get("duration_ms")?,
        captions_key: row.try_get("captions_key")?,
        sound_level: sound_level(row)?,
        attempts: row.try_get("attempts")?,
        worker: row.try_get("worker")?,
        created_at: row.try_get("created_at")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// The sound level of a render's row, stored in thousandths.
fn sound_level(row: &AnyRow) -> Result<Option<SoundLevel>> {
    let milli = |column| row.try_get::<Option<i64>, _>(column).map(|v| v.map(|v| v as f64 / 1000.0));
    Ok(match (milli("loudness_milli")?, milli("true_peak_milli")?) {
        (Some(loudness), Some(true_peak)) => Some(SoundLevel { loudness, true_peak }),
        _ => None,
    })
}

fn project_from(row: &AnyRow) -> Result<ProjectRecord> {
    Ok(ProjectRecord {
        id: id(row, "id")?,
        user_id: id(row, "user_id")?,
        template_id: id(row, "template_id")?,
        job_id: id(row, "job_id")?,
        render_id: id(row, "render_id")?,
        title: row.try_get("title")?,
        json: row.try_get("json")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    /// Writes `job` in `tx` ([`Store::write_job`]) and commits it, or rolls back when the
    /// credits do not cover it.
    async fn commit_job(&self, mut tx: Transaction<'static, Any>, job: &NewJob, owner: &str) -> Result<JobCreation> {
        if !self.write_job(&mut tx, job, owner).await? {
            tx.rollback().await?;
            return Ok(JobCreation::CreditsExhausted { needed: job.charges() });
        }
        tx.commit().await?;
        if job.create_render {
            self.outbox_written();
        }
        Ok(JobCreation::Created)
    }

    /// Writes `job` in `tx`, its renders counting in the share of `owner` (an account)
    /// and charged to it; `false` when its credits do not cover them (roll back then).
    async fn write_job(&self, tx: &mut Transaction<'static, Any>, job: &NewJob, owner: &str) -> Result<bool> {
        let charges = job.charges();
        let record = JobRecord::from_new(job);
        let sql = format!(
            "INSERT INTO jobs ({JOB_COLUMNS}, credit_account) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $13, \
             $14, $15, CASE WHEN $11 > 0 THEN $16 END)"
        );
        bind_job(sqlx::query(&sql), job, &record, charges)
            .bind(owner)
            .execute(&mut **tx)
            .await
            .map_err(missing_reference("template"))?;
        let account = if charges > 0 { Some(CreditAccount::decode(owner)?) } else { None };
        for (render, stored) in job.renders.iter().zip(&record.renders) {
            let sql = format!(
                "INSERT INTO renders ({NEW_RENDER_COLUMNS}, account) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
            );
            bind_render(sqlx::query(&sql), job, render, stored).bind(owner).execute(&mut **tx).await?;
            if let Some((project_id, json)) = &render.project {
                let sql = format!("INSERT INTO projects ({PROJECT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
                bind_project(sqlx::query(&sql), job, render, project_id, json).execute(&mut **tx).await?;
            }
            if job.create_render {
                outbox::enqueue(&mut *tx, &crate::trace::envelope(Message::RenderV1 { render_id: render.id.clone() }))
                    .await?;
            }
        }
        // The debit comes last: it locks the account's row until the commit, and every
        // job of the account waits for that lock.
        match &account {
            Some(account) => account.debit(tx, charges).await,
            None => Ok(true),
        }
    }

    /// [`JobStore::create_job`](crate::store::JobStore::create_job) on PostgreSQL without an idempotency key: the debit, the job,
    /// its renders, projects and outbox rows in one statement of data-modifying `WITH`
    /// queries, so one round trip (and no BEGIN/COMMIT) per job. Nothing is written when
    /// the debit finds too few credits.
    async fn create_job_in_one_statement(&self, job: &NewJob) -> Result<JobCreation> {
        let record = JobRecord::from_new(job);
        let charges = job.charges();
        // $1–$15: the job; then the rows, numbered on.
        let mut next = 16;
        let mut placeholders = |n: usize| {
            let list: Vec<String> = (next..next + n).map(|i| format!("${i}")).collect();
            next += n;
            format!("({})", list.join(", "))
        };
        let render_rows: Vec<String> = job.renders.iter().map(|_| placeholders(16)).collect();
        let project_rows: Vec<String> =
            job.renders.iter().filter(|r| r.project.is_some()).map(|_| placeholders(8)).collect();
        let outbox_rows: Vec<String> =
            job.renders.iter().filter(|_| job.create_render).map(|_| placeholders(4)).collect();
        let mut sql = format!(
            "WITH owner AS (SELECT {ACCOUNT_OF_USER_2} AS o), \
             account AS (SELECT CASE WHEN $11 > 0 THEN o END AS a FROM owner), \
             debit_user AS (UPDATE users SET credits = credits - $11 WHERE id = $2 \
                AND (SELECT a FROM account) = 'user:' || $2 AND credits >= $11 RETURNING 1), \
             debit_group AS (UPDATE user_groups SET credits = credits - $11 \
                WHERE id = substr((SELECT a FROM account), 7) AND (SELECT a FROM account) LIKE 'group:%' \
                AND credits >= $11 RETURNING 1), \
             job AS (INSERT INTO jobs ({JOB_COLUMNS}, credit_account) \
                SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $13, $14, $15, (SELECT a FROM account) \
                WHERE $11 = 0 OR EXISTS (SELECT 1 FROM debit_user) OR EXISTS (SELECT 1 FROM debit_group) \
                RETURNING id), \
             renders AS (INSERT INTO renders ({NEW_RENDER_COLUMNS}, account) \
                SELECT v.*, (SELECT o FROM owner) FROM (VALUES {}) AS v WHERE EXISTS (SELECT 1 FROM job))",
            render_rows.join(", ")
        );
        if !project_rows.is_empty() {
            sql.push_str(&format!(
                ", projects AS (INSERT INTO projects ({PROJECT_COLUMNS}) \
                 SELECT * FROM (VALUES {}) AS v WHERE EXISTS (SELECT 1 FROM job))",
                project_rows.join(", ")
            ));
        }
        if !outbox_rows.is_empty() {
            sql.push_str(&format!(
                ", outbox_rows AS (INSERT INTO outbox (id, queue, payload, created_at, available_at, deliveries) \
                 SELECT id, queue, payload, created_at, created_at, 0 FROM (VALUES {}) AS v (id, queue, payload, created_at) \
                 WHERE EXISTS (SELECT 1 FROM job))",
                outbox_rows.join(", ")
            ));
        }
        sql.push_str(" SELECT count(*) FROM job");

        let mut query = bind_job(sqlx::query(&sql), job, &record, charges);
        for (render, stored) in job.renders.iter().zip(&record.renders) {
            query = bind_render(query, job, render, stored);
        }
        for render in &job.renders {
            if let Some((project_id, json)) = &render.project {
                query = bind_project(query, job, render, project_id, json);
            }
        }
        if job.create_render {
            for render in &job.renders {
                let envelope = crate::trace::envelope(Message::RenderV1 { render_id: render.id.clone() });
                let payload = String::from_utf8(envelope.to_bytes()).expect("JSON is UTF-8");
                query = query.bind(envelope.id).bind(Queue::Render.name()).bind(payload).bind(envelope.enqueued_at);
            }
        }
        let created: i64 =
            query.fetch_one(&self.pool).await.and_then(|row| row.try_get(0)).map_err(missing_reference("template"))?;
        if created == 0 {
            return Ok(JobCreation::CreditsExhausted { needed: charges });
        }
        if job.create_render {
            self.outbox_written();
        }
        Ok(JobCreation::Created)
    }

    /// The answer to a request whose idempotency key is taken.
    async fn replay(&self, user_id: &UserId, idem: Idempotency<'_>) -> Result<JobCreation> {
        let row =
            sqlx::query("SELECT request_hash, response FROM idempotency_keys WHERE user_id = $1 AND idem_key = $2")
                .bind(user_id.as_str())
                .bind(idem.key)
                .fetch_optional(&self.pool)
                .await?
                // Expired and removed meanwhile: a rare race; the client may simply retry.
                .ok_or_else(|| {
                    StoreError::Conflict("the Idempotency-Key was just released; retry the request".into())
                })?;
        let hash: String = row.try_get("request_hash")?;
        if hash != idem.request_hash {
            return Err(StoreError::Conflict(
                "this Idempotency-Key was used with a different request in the last 24 hours".into(),
            ));
        }
        Ok(JobCreation::Replayed(row.try_get("response")?))
    }

    /// Loads the renders of `jobs` with one query.
    async fn attach_renders(&self, jobs: &mut [JobRecord]) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let placeholders: Vec<String> = (1..=jobs.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT {RENDER_COLUMNS} FROM renders WHERE job_id IN ({}) ORDER BY job_id, position",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for job in jobs.iter() {
            query = query.bind(job.id.as_str());
        }
        for row in query.fetch_all(&self.pool).await? {
            let render = render_from(&row)?;
            if let Some(job) = jobs.iter_mut().find(|j| j.id == render.job_id) {
                job.renders.push(render);
            }
        }
        Ok(())
    }
}

impl JobStore for Store {
    #[tracing::instrument(name = "store::create_job", level = "debug", skip_all)]
    async fn create_job(&self, job: &NewJob, idempotency: Option<Idempotency<'_>>) -> Result<JobCreation> {
        if self.dialect == Dialect::Postgres && idempotency.is_none() && !job.renders.is_empty() {
            return self.create_job_in_one_statement(job).await;
        }
        let now = job.created_at;
        let mut tx = self.begin().await?;
        if let Some(idem) = idempotency {
            sqlx::query("DELETE FROM idempotency_keys WHERE user_id = $1 AND idem_key = $2 AND created_at < $3")
                .bind(job.user_id.as_str())
                .bind(idem.key)
                .bind(now - IDEMPOTENCY_TTL_MS)
                .execute(&mut *tx)
                .await?;
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys (user_id, idem_key, request_hash, job_id, response, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(job.user_id.as_str())
            .bind(idem.key)
            .bind(idem.request_hash)
            .bind(job.id.as_str())
            .bind(idem.response)
            .bind(now)
            .execute(&mut *tx)
            .await;
            match inserted {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    return self.replay(&job.user_id, idem).await;
                }
                Err(e) => return Err(e.into()),
            }
        }

        let owner = account_in(&mut tx, &job.user_id).await?;
        self.commit_job(tx, job, &owner).await
    }

    #[tracing::instrument(name = "store::create_draft", level = "debug", skip_all)]
    async fn create_draft(&self, job: &NewJob, since: i64, budget_ms: i64) -> Result<JobCreation> {
        let mut tx = self.begin().await?;
        let owner = account_in(&mut tx, &job.user_id).await?;
        // One account's drafts are created one at a time, so that the budget read below
        // holds until the commit.
        self.one_at_a_time(&mut tx, &format!("drafts:{owner}")).await?;
        let rows = sqlx::query(
            "SELECT j.created_at, r.video_ms FROM jobs j JOIN renders r ON r.job_id = j.id \
             WHERE j.draft = 1 AND j.created_at >= $1 AND r.account = $2 ORDER BY j.created_at",
        )
        .bind(since)
        .bind(&owner)
        .fetch_all(&mut *tx)
        .await?;
        let drafts = rows
            .iter()
            .map(|row| Ok((row.try_get("created_at")?, row.try_get("video_ms")?)))
            .collect::<Result<Vec<(i64, i64)>>>()?;
        let used: i64 = drafts.iter().map(|(_, ms)| ms).sum();
        let wanted: i64 = job.renders.iter().map(|r| r.video_ms).sum();
        if used + wanted > budget_ms {
            tx.rollback().await?;
            return Ok(JobCreation::DraftBudgetSpent { drafts });
        }
        self.commit_job(tx, job, &owner).await
    }

    #[tracing::instrument(name = "store::job", level = "debug", skip_all)]
    async fn job(&self, id: &JobId) -> Result<JobRecord> {
        let mut jobs = vec![self.job_alone(id).await?];
        self.attach_renders(&mut jobs).await?;
        Ok(jobs.remove(0))
    }

    #[tracing::instrument(name = "store::job_alone", level = "debug", skip_all)]
    async fn job_alone(&self, id: &JobId) -> Result<JobRecord> {
        let row = sqlx::query(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("job"))?;
        job_from(&row)
    }

    #[tracing::instrument(name = "store::jobs_of", level = "debug", skip_all)]
    async fn jobs_of(
        &self,
        user_id: &UserId,
        template_id: Option<&TemplateId>,
        status: Option<JobStatus>,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<JobRecord>> {
        let mut filter = String::new();
        let mut next = 3;
        if template_id.is_some() {
            next += 1;
            filter += &format!(" AND template_id = ${next}");
        }
        if status.is_some() {
            next += 1;
            filter += &format!(" AND status = ${next}");
        }
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = $1 AND draft = 0{filter} \
             ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
        );
        let mut query = sqlx::query(&sql).bind(user_id.as_str()).bind(i64::from(limit)).bind(offset as i64);
        if let Some(template_id) = template_id {
            query = query.bind(template_id.as_str());
        }
        if let Some(status) = status {
            query = query.bind(status.as_str());
        }
        let mut jobs = query.fetch_all(&self.pool).await?.iter().map(job_from).collect::<Result<Vec<_>>>()?;
        self.attach_renders(&mut jobs).await?;
        Ok(jobs)
    }

    #[tracing::instrument(name = "store::project", level = "debug", skip_all)]
    async fn project(&self, id: &ProjectId) -> Result<ProjectRecord> {
        let row = sqlx::query(&format!("SELECT {PROJECT_COLUMNS} FROM projects WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("project"))?;
        project_from(&row)
    }
}

/// The account `user_id` works in (see `CreditStore::account_of`), read in `tx`: the one
/// whose share a job's renders count in and that pays for them.
async fn account_in(tx: &mut Transaction<'static, Any>, user_id: &UserId) -> Result<String> {
    Ok(sqlx::query_scalar(&format!("SELECT {}", ACCOUNT_OF_USER_2.replace("$2", "$1")))
        .bind(user_id.as_str())
        .fetch_one(&mut **tx)
        .await?)
}
