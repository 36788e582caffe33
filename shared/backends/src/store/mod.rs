//! Metadata store port: the system of record.
//!
//! One schema and one repository over sqlx's `Any` driver; the two adapters are the
//! dialects (`sqlite` for the embedded default, `postgres` for the distributed mode), each
//! contributing its connection set-up and the few statements that differ. Every write
//! that must cause work inserts its outbox row in the same transaction.
//!
//! Its interface is one narrow trait per aggregate ([`traits`]: `UserStore`,
//! `TemplateStore`, `SchedulerStore` …), each implemented in the module of its aggregate;
//! a caller imports the traits of what it works on.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Transaction};

use reelfarm_domain::id::EntityId;

mod accounts;
mod assets;
mod deliveries;
mod housekeeping;
mod integrations;
mod jobs;
mod libraries;
mod outbox;
mod postgres;
mod sqlite;
mod studio;
mod template_versions;
mod templates;
pub mod traits;
mod usage;
mod users;
mod workers;

pub use accounts::{Account, GroupSummary};
pub use assets::{AssetQuery, STALE_UPLOAD_MS};
pub use housekeeping::{Pruned, DRAFT_RETENTION_MS, HANDLED_RETENTION_MS};
pub use integrations::IntegrationRecord;
pub use jobs::{
    AccountShare, Claim, ConversionClaim, Idempotency, JobCreation, JobRecord, MediaClaim, NewJob, NewRender, PartKind,
    PartRecord, Pool, ProjectRecord, RenderOutcome, RenderRecord, Work, CANCELLED_ERROR, IDEMPOTENCY_TTL_MS,
    USAGE_WINDOW_MS,
};
pub use outbox::{OutboxRow, OutboxTake};
pub use reelfarm_domain::account::{Credits, Group, User};
pub use reelfarm_domain::delivery::{AfterAttempt, DeliveryAttempt, DeliveryRecord, NewDelivery};
pub use reelfarm_domain::library::{Library, LibraryKind, LibraryOwner};
pub use reelfarm_domain::template::stored::{
    blob_prefix as template_blob_prefix, NewTemplate, ShareTarget, StudioSession, TemplateContent, TemplateRecord,
    TemplateVersion,
};
pub(crate) use sqlite::publish_memory as publish_sqlite_memory;
pub use studio::{STUDIO_HISTORY, STUDIO_RETENTION_MS};
pub use traits::{
    AccountStore, AssetStore, CreditStore, DeliveryStore, HousekeepingStore, IntegrationStore, JobStore, LibraryStore,
    OutboxStore, PartStore, RenderStore, SchedulerStore, ShareStore, StudioStore, TemplateStore, TemplateVersionStore,
    UsageStore, UserStore, WorkerStore,
};
pub use usage::{RenderCounts, Usage};
pub use users::{new_webhook_secret, NewUser, TokenRecord};
pub use workers::WorkerRecord;

/// The SQL dialect behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether a retry may succeed (connection trouble, lock timeouts), as opposed to a
    /// fault in the request or the data.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(e) => {
                matches!(
                    e,
                    sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_)
                ) || e.as_database_error().is_some_and(|d| {
                    let code = d.code().unwrap_or_default();
                    // SQLite busy/locked; PostgreSQL serialization failure, deadlock.
                    matches!(&*code, "5" | "6" | "517" | "40001" | "40P01")
                })
            }
            _ => false,
        }
    }
}

/// A unique-constraint violation, which callers turn into a domain conflict.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| d.is_unique_violation())
}

/// A foreign-key violation: the row refers to one that does not exist.
pub(crate) fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| d.is_foreign_key_violation())
}

/// A status read back from a row: `parse` of the stored name, or the row is corrupt.
pub(crate) fn parse_status<T>(parse: fn(&str) -> Option<T>, what: &str, stored: String) -> Result<T> {
    parse(&stored).ok_or_else(|| StoreError::Corrupt(format!("{what} status {stored:?}")))
}

/// The error of a write whose foreign key found nothing: `missing` is not found.
pub(crate) fn missing_reference(missing: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    move |e| if is_foreign_key_violation(&e) { StoreError::NotFound(missing) } else { e.into() }
}

/// The database driver's error, re-exported for callers that classify store errors.
pub use sqlx::Error as SqlxError;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The metadata store: a cheap-to-clone handle over the pool.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// Signalled after an outbox write commits, so a relay in this process wakes at once.
    outbox_notify: Arc<Notify>,
}

impl Store {
    /// Connects to `url` (`sqlite://FILE`, `sqlite::memory:` or `postgres://…`) and brings
    /// the schema up to date.
    #[tracing::instrument(name = "store::connect", level = "debug", skip_all)]
    pub async fn connect(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let dialect = if url.starts_with("sqlite:") { Dialect::Sqlite } else { Dialect::Postgres };
        let options = AnyPoolOptions::new().acquire_timeout(Duration::from_secs(10));
        let pool = match dialect {
            Dialect::Sqlite => sqlite::connect(url, options).await?,
            Dialect::Postgres => postgres::connect(url, options).await?,
        };
        let store = Store { pool, dialect, outbox_notify: Arc::new(Notify::new()) };
        store.migrate().await?;
        Ok(store)
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn migrate(&self) -> Result<()> {
        sqlx::migrate!("./migrations").run(&self.pool).await?;
        Ok(())
    }

    /// Starts a transaction that will write. SQLite takes the write lock up front so two
    /// writers queue on the busy timeout instead of failing on a lock upgrade.
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, Any>> {
        Ok(match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Dialect::Postgres => self.pool.begin().await?,
        })
    }

    /// Makes the transactions that pass the same `key` here run this part one at a time,
    /// until each commits: a PostgreSQL advisory lock (SQLite's write transactions,
    /// `BEGIN IMMEDIATE`, are one at a time already).
    pub(crate) async fn one_at_a_time(&self, tx: &mut Transaction<'static, Any>, key: &str) -> Result<()> {
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS locked")
                .bind(key)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Checks the database answers (readiness probe).
    #[tracing::instrument(name = "store::ready", level = "debug", skip_all)]
    pub async fn ready(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool, waiting for connections in use to be returned.
    #[tracing::instrument(name = "store::close", level = "debug", skip_all)]
    pub async fn close(&self) {
        self.pool.close().await
    }
}

/// Reads an id column as its entity's id type (the store keeps only ids we made).
pub(crate) fn id<T: EntityId>(row: &AnyRow, column: &str) -> Result<T> {
    use sqlx::Row;
    Ok(T::trusted(row.try_get(column)?))
}

/// Reads a nullable id column.
pub(crate) fn optional_id<T: EntityId>(row: &AnyRow, column: &str) -> Result<Option<T>> {
    use sqlx::Row;
    Ok(row.try_get::<Option<String>, _>(column)?.map(T::trusted))
}

/// Reads a 0/1 flag column (flags are stored as integers in both dialects, which the `Any`
/// driver decodes alike).
pub(crate) fn flag(row: &AnyRow, column: &str) -> Result<bool> {
    use sqlx::Row;
    Ok(row.try_get::<i64, _>(column)? != 0)
}

#[cfg(test)]
mod conformance;
