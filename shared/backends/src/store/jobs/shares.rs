//! Accounts' shares of the workers: the weight an account's running renders
//! are divided by when the scheduler compares accounts (1 unless set) and the highest
//! priority its jobs may have (`high` unless capped). Operators set both with `reelfarm
//! admin share`; an account is a user, or the first group a user joined (the account
//! that pays for its jobs).

use reelfarm_domain::id::now_ms;
use reelfarm_domain::priority::Priority;
use sqlx::Row;

use super::credits::ACCOUNT_OF_USER_2;
use crate::store::{Result, ShareStore, Store, StoreError, UserStore};
use reelfarm_domain::id::UserId;

/// An account's share of the workers, and its renders now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountShare {
    /// `user:ID` or `group:ID`.
    pub account: String,
    /// The user's or group's name.
    pub name: String,
    pub weight: i64,
    pub max_priority: Priority,
    /// Renders being rendered.
    pub running: i64,
    /// Renders waiting for a worker.
    pub waiting: i64,
}

/// The SQL name of account `a.account` (a user's or a group's).
const NAME_OF_ACCOUNT: &str = "CASE WHEN a.account LIKE 'user:%' \
    THEN (SELECT name FROM users WHERE id = substr(a.account, 6)) \
    ELSE (SELECT name FROM user_groups WHERE id = substr(a.account, 7)) END";

impl ShareStore for Store {
    #[tracing::instrument(name = "store::max_priority_of", level = "debug", skip_all)]
    async fn max_priority_of(&self, user_id: &UserId) -> Result<Priority> {
        let cap: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT max_priority FROM account_shares WHERE account = {}",
            ACCOUNT_OF_USER_2.replace("$2", "$1")
        ))
        .bind(user_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(cap.map_or(Priority::High, Priority::from_rank))
    }

    #[tracing::instrument(name = "store::set_share", level = "debug", skip_all)]
    async fn set_share(&self, who: &str, weight: Option<i64>, max_priority: Option<Priority>) -> Result<AccountShare> {
        let account = match self.find_user(who).await {
            Ok(user) => format!("user:{}", user.id),
            Err(StoreError::NotFound(_)) => {
                let group = self.find_group(who).await.map_err(|e| match e {
                    StoreError::NotFound(_) => StoreError::NotFound("user or group"),
                    e => e,
                })?;
                format!("group:{}", group.id)
            }
            Err(e) => return Err(e),
        };
        sqlx::query(
            "INSERT INTO account_shares (account, weight, max_priority, updated_at) \
             VALUES ($1, COALESCE($2, 1), COALESCE($3, 2), $4) \
             ON CONFLICT (account) DO UPDATE SET weight = COALESCE($2, account_shares.weight), \
             max_priority = COALESCE($3, account_shares.max_priority), updated_at = $4",
        )
        .bind(&account)
        .bind(weight)
        .bind(max_priority.map(Priority::rank))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        let shares = self.shares().await?;
        shares.into_iter().find(|s| s.account == account).ok_or(StoreError::NotFound("account"))
    }

    #[tracing::instrument(name = "store::shares", level = "debug", skip_all)]
    async fn shares(&self) -> Result<Vec<AccountShare>> {
        let rows = sqlx::query(&format!(
            "SELECT a.account, {NAME_OF_ACCOUNT} AS name, COALESCE(s.weight, 1) AS weight, \
             COALESCE(s.max_priority, 2) AS max_priority, \
             (SELECT COUNT(*) FROM renders r WHERE r.account = a.account AND r.status = 'started') AS running, \
             (SELECT COUNT(*) FROM renders r WHERE r.account = a.account AND r.status = 'pending') AS waiting \
             FROM (SELECT account FROM renders WHERE status IN ('pending', 'started') \
                   UNION SELECT account FROM account_shares) a \
             LEFT JOIN account_shares s ON s.account = a.account \
             ORDER BY running DESC, waiting DESC, a.account"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AccountShare {
                    account: row.try_get("account")?,
                    name: row.try_get::<Option<String>, _>("name")?.unwrap_or_default(),
                    weight: row.try_get("weight")?,
                    max_priority: Priority::from_rank(row.try_get("max_priority")?),
                    running: row.try_get("running")?,
                    waiting: row.try_get("waiting")?,
                })
            })
            .collect()
    }
}
