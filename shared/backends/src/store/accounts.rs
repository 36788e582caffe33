//! What the console's admin area and first sign-in need of users: operators, one-time
//! sign-in links, memberships, and every user and group at a glance.

use std::time::Duration;

use sqlx::Row;

use super::users::{group_from, user_from, USER_COLUMNS};
use super::{Group, Result, Store, StoreError, User};
use crate::store::{AccountStore, UserStore};
use reelfarm_domain::id::{now_ms, GroupId, UserId};

/// A user as the admin area lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: User,
    /// What they sign in to the console with, if anything.
    pub email: Option<String>,
    /// Their groups, in the order joined.
    pub groups: Vec<Group>,
}

/// A group as the admin area lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    pub group: Group,
    pub members: u64,
}

impl AccountStore for Store {
    #[tracing::instrument(name = "store::set_operator", level = "debug", skip_all)]
    async fn set_operator(&self, user_id: &UserId, operator: bool) -> Result<()> {
        let done = sqlx::query("UPDATE users SET operator = $1 WHERE id = $2")
            .bind(i64::from(operator))
            .bind(user_id.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Ok(())
    }

    #[tracing::instrument(name = "store::create_sign_in_link", level = "debug", skip_all)]
    async fn create_sign_in_link(&self, user_id: &UserId, ttl: Duration) -> Result<String> {
        let token = reelfarm_domain::token::random_base62(43);
        let now = now_ms();
        sqlx::query("INSERT INTO sign_in_links (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(reelfarm_domain::token::hash(&token))
            .bind(user_id.as_str())
            .bind(now)
            .bind(now + ttl.as_millis() as i64)
            .execute(&self.pool)
            .await
            .map_err(super::missing_reference("user"))?;
        Ok(token)
    }

    #[tracing::instrument(name = "store::use_sign_in_link", level = "debug", skip_all)]
    async fn use_sign_in_link(&self, token: &str) -> Result<Option<User>> {
        let now = now_ms();
        let user_id: Option<String> = sqlx::query_scalar(
            "UPDATE sign_in_links SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 \
             RETURNING user_id",
        )
        .bind(now)
        .bind(reelfarm_domain::token::hash(token))
        .fetch_optional(&self.pool)
        .await?;
        match user_id {
            Some(id) => Ok(Some(self.user(&UserId::trusted(id)).await?)),
            None => Ok(None),
        }
    }

    #[tracing::instrument(name = "store::email_of", level = "debug", skip_all)]
    async fn email_of(&self, user_id: &UserId) -> Result<Option<String>> {
        let email: Option<Option<String>> = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
            .bind(user_id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        email.ok_or(StoreError::NotFound("user"))
    }

    #[tracing::instrument(name = "store::accounts", level = "debug", skip_all)]
    async fn accounts(&self, limit: u32, offset: u64) -> Result<Vec<Account>> {
        let rows = sqlx::query(&format!("SELECT {USER_COLUMNS}, email FROM users ORDER BY name LIMIT $1 OFFSET $2"))
            .bind(i64::from(limit))
            .bind(offset as i64)
            .fetch_all(&self.pool)
            .await?;
        let mut accounts = rows
            .iter()
            .map(|row| Ok(Account { user: user_from(row)?, email: row.try_get("email")?, groups: Vec::new() }))
            .collect::<Result<Vec<_>>>()?;
        if accounts.is_empty() {
            return Ok(accounts);
        }
        let places: Vec<String> = (1..=accounts.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT m.user_id, g.id, g.name, g.credits, g.created_at FROM group_members m JOIN user_groups g ON g.id = m.group_id \
             WHERE m.user_id IN ({}) ORDER BY m.joined_at, g.name",
            places.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for account in &accounts {
            query = query.bind(account.user.id.as_str());
        }
        for row in query.fetch_all(&self.pool).await? {
            let user_id: String = row.try_get("user_id")?;
            if let Some(account) = accounts.iter_mut().find(|a| a.user.id.as_str() == user_id) {
                account.groups.push(group_from(&row)?);
            }
        }
        Ok(accounts)
    }

    #[tracing::instrument(name = "store::group_summaries", level = "debug", skip_all)]
    async fn group_summaries(&self) -> Result<Vec<GroupSummary>> {
        let rows = sqlx::query(
            "SELECT g.id, g.name, g.credits, g.created_at, \
             (SELECT COUNT(*) FROM group_members m WHERE m.group_id = g.id) AS members \
             FROM user_groups g ORDER BY g.name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(GroupSummary { group: group_from(row)?, members: row.try_get::<i64, _>("members")? as u64 }))
            .collect()
    }

    #[tracing::instrument(name = "store::join_group", level = "debug", skip_all)]
    async fn join_group(&self, user_id: &UserId, group: &str) -> Result<Group> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO user_groups (id, name, credits, created_at) VALUES ($1, $2, 0, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(GroupId::generate().as_str())
        .bind(group)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let joined = sqlx::query(
            "INSERT INTO group_members (group_id, user_id, joined_at) SELECT id, $1, $2 FROM user_groups WHERE name = $3 \
             ON CONFLICT DO NOTHING",
        )
        .bind(user_id.as_str())
        .bind(now)
        .bind(group)
        .execute(&mut *tx)
        .await
        .map_err(super::missing_reference("user"));
        joined?;
        tx.commit().await?;
        self.find_group(group).await
    }

    #[tracing::instrument(name = "store::leave_group", level = "debug", skip_all)]
    async fn leave_group(&self, user_id: &UserId, group_id: &GroupId) -> Result<bool> {
        let done = sqlx::query("DELETE FROM group_members WHERE user_id = $1 AND group_id = $2")
            .bind(user_id.as_str())
            .bind(group_id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
