//! Linked accounts of users: one row per user and provider, its secrets sealed
//! by the caller (`crate::integration`); this layer never sees them in clear.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{id, missing_reference, Result, Store, StoreError};
use crate::store::IntegrationStore;
use reelfarm_domain::id::{now_ms, UserId};
use reelfarm_domain::integration::Provider;

/// A stored linked account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrationRecord {
    pub user_id: UserId,
    pub provider: Provider,
    pub client_id: String,
    /// The account's secrets, sealed (`crate::integration::Sealer`).
    pub sealed: String,
    /// When first linked (Unix ms); kept when linked again.
    pub linked_at: i64,
    /// When last linked (Unix ms).
    pub updated_at: i64,
}

const COLUMNS: &str = "user_id, provider, client_id, sealed, linked_at, updated_at";

fn record_from(row: &AnyRow) -> Result<IntegrationRecord> {
    let provider: String = row.try_get("provider")?;
    Ok(IntegrationRecord {
        user_id: id(row, "user_id")?,
        provider: Provider::parse(&provider)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown integration provider `{provider}`")))?,
        client_id: row.try_get("client_id")?,
        sealed: row.try_get("sealed")?,
        linked_at: row.try_get("linked_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

impl IntegrationStore for Store {
    #[tracing::instrument(name = "store::link_integration", level = "debug", skip_all)]
    async fn link_integration(
        &self,
        user_id: &UserId,
        provider: Provider,
        client_id: &str,
        sealed: &str,
    ) -> Result<()> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO integrations (user_id, provider, client_id, sealed, linked_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5) \
             ON CONFLICT (user_id, provider) DO UPDATE SET \
             client_id = excluded.client_id, sealed = excluded.sealed, updated_at = excluded.updated_at",
        )
        .bind(user_id.as_str())
        .bind(provider.as_str())
        .bind(client_id)
        .bind(sealed)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(missing_reference("user"))?;
        Ok(())
    }

    #[tracing::instrument(name = "store::integration", level = "debug", skip_all)]
    async fn integration(&self, user_id: &UserId, provider: Provider) -> Result<Option<IntegrationRecord>> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM integrations WHERE user_id = $1 AND provider = $2"))
            .bind(user_id.as_str())
            .bind(provider.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record_from).transpose()
    }

    #[tracing::instrument(name = "store::integrations", level = "debug", skip_all)]
    async fn integrations(&self, user_id: &UserId) -> Result<Vec<IntegrationRecord>> {
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM integrations WHERE user_id = $1 ORDER BY provider"))
            .bind(user_id.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record_from).collect()
    }

    #[tracing::instrument(name = "store::unlink_integration", level = "debug", skip_all)]
    async fn unlink_integration(&self, user_id: &UserId, provider: Provider) -> Result<bool> {
        let done = sqlx::query("DELETE FROM integrations WHERE user_id = $1 AND provider = $2")
            .bind(user_id.as_str())
            .bind(provider.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
