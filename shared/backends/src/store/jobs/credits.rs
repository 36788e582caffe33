//! Whose credits a job spends, and the credits a user can spend.

use sqlx::{Any, Transaction};

use crate::store::{CreditStore, Result, Store, StoreError};
use reelfarm_domain::id::{GroupId, UserId};

/// SQL of the encoded [`CreditAccount`] of user `$2`: the first group they joined, or
/// their own.
pub(super) const ACCOUNT_OF_USER_2: &str =
    "COALESCE((SELECT 'group:' || group_id FROM group_members WHERE user_id = $2 \
    ORDER BY joined_at, group_id LIMIT 1), 'user:' || $2)";

/// Whose credits a user spends: the first group they joined, or their own (credits are
/// counted per user, or per group for group members).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CreditAccount {
    User(UserId),
    Group(GroupId),
}

impl CreditAccount {
    pub(super) fn decode(s: &str) -> Result<CreditAccount> {
        match s.split_once(':') {
            Some(("user", id)) => Ok(CreditAccount::User(UserId::trusted(id))),
            Some(("group", id)) => Ok(CreditAccount::Group(GroupId::trusted(id))),
            _ => Err(StoreError::Corrupt(format!("credit account {s:?}"))),
        }
    }

    fn table(&self) -> (&'static str, &str) {
        match self {
            CreditAccount::User(id) => ("users", id.as_str()),
            CreditAccount::Group(id) => ("user_groups", id.as_str()),
        }
    }

    pub(super) async fn of_user(conn: &mut sqlx::AnyConnection, user_id: &UserId) -> Result<CreditAccount> {
        let account: String = sqlx::query_scalar(&format!("SELECT {}", ACCOUNT_OF_USER_2.replace("$2", "$1")))
            .bind(user_id.as_str())
            .fetch_one(&mut *conn)
            .await?;
        CreditAccount::decode(&account)
    }

    /// Takes `n` credits if there are that many: one conditional update, so that
    /// concurrent requests can never spend a credit twice.
    pub(super) async fn debit(&self, tx: &mut Transaction<'static, Any>, n: i64) -> Result<bool> {
        let (table, id) = self.table();
        let done = sqlx::query(&format!("UPDATE {table} SET credits = credits - $1 WHERE id = $2 AND credits >= $1"))
            .bind(n)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(super) async fn credit(&self, tx: &mut Transaction<'static, Any>, n: i64) -> Result<()> {
        let (table, id) = self.table();
        sqlx::query(&format!("UPDATE {table} SET credits = credits + $1 WHERE id = $2"))
            .bind(n)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

impl CreditStore for Store {
    #[tracing::instrument(name = "store::available_credits", level = "debug", skip_all)]
    async fn available_credits(&self, user_id: &UserId) -> Result<i64> {
        let mut conn = self.pool.acquire().await?;
        let account = CreditAccount::of_user(&mut conn, user_id).await?;
        let (table, id) = account.table();
        sqlx::query_scalar(&format!("SELECT credits FROM {table} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound("user"))
    }

    #[tracing::instrument(name = "store::account_of", level = "debug", skip_all)]
    async fn account_of(&self, user_id: &UserId) -> Result<String> {
        Ok(sqlx::query_scalar(&format!("SELECT {}", ACCOUNT_OF_USER_2.replace("$2", "$1")))
            .bind(user_id.as_str())
            .fetch_one(&self.pool)
            .await?)
    }
}
