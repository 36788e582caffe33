//! Users, groups, memberships, access tokens and credits.

use base64::Engine;
use rand::RngCore;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{flag, id, is_unique_violation, missing_reference, Result, Store, StoreError};
use crate::store::UserStore;
use reelfarm_domain::account::{Credits, Group, User};
use reelfarm_domain::id::{is_id, new_id, now_ms, UserId};
use reelfarm_domain::token;

/// A stored token: everything but the secret itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: String,
    pub user_id: UserId,
    /// What its owner called it (empty for tokens made by `reelfarm admin`).
    pub name: String,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    /// When it last authenticated a request, to the minute.
    pub last_used_at: Option<i64>,
}

/// How often a token's last use is written.
const LAST_USE_RESOLUTION_MS: i64 = 60_000;

/// What a new user is made with ([`UserStore::create_account`](crate::store::UserStore::create_account)).
#[derive(Debug, Clone, Copy)]
pub struct NewUser<'a> {
    pub name: &'a str,
    /// A group to join, made if missing.
    pub group: Option<&'a str>,
    pub credits: i64,
    pub operator: bool,
    /// The address they will sign in to the console with (normalised by the caller).
    pub sign_in_email: Option<&'a str>,
}

pub(super) const USER_COLUMNS: &str = "id, number, name, credits, created_at, operator";
const TOKEN_COLUMNS: &str = "id, user_id, name, prefix, created_at, expires_at, revoked_at, last_used_at";

pub(super) fn user_from(row: &AnyRow) -> Result<User> {
    Ok(User {
        id: id(row, "id")?,
        number: row.try_get("number")?,
        name: row.try_get("name")?,
        credits: row.try_get("credits")?,
        created_at: row.try_get("created_at")?,
        operator: flag(row, "operator")?,
    })
}

pub(super) fn group_from(row: &AnyRow) -> Result<Group> {
    Ok(Group {
        id: id(row, "id")?,
        name: row.try_get("name")?,
        credits: row.try_get("credits")?,
        created_at: row.try_get("created_at")?,
    })
}

fn token_from(row: &AnyRow) -> Result<TokenRecord> {
    Ok(TokenRecord {
        id: row.try_get("id")?,
        user_id: id(row, "user_id")?,
        name: row.try_get("name")?,
        prefix: row.try_get("prefix")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
        last_used_at: row.try_get("last_used_at")?,
    })
}

/// A new Standard Webhooks signing secret: `whsec_` + base64 of 24 random bytes.
pub fn new_webhook_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

impl UserStore for Store {
    async fn create_user(&self, name: &str, group: Option<&str>, credits: i64) -> Result<User> {
        self.create_account(&NewUser { name, group, credits, operator: false, sign_in_email: None }).await
    }

    #[tracing::instrument(name = "store::create_account", level = "debug", skip_all)]
    async fn create_account(&self, new: &NewUser<'_>) -> Result<User> {
        let NewUser { name, group, credits, operator, sign_in_email } = *new;
        let now = now_ms();
        let mut user =
            User { id: UserId::generate(), number: 0, name: name.to_string(), credits, created_at: now, operator };
        let mut tx = self.begin().await?;
        // The next number is taken in the insert itself; two users created at the same
        // moment may pick the same one, and the loser tries again with the next.
        let mut tries = 0;
        user.number = loop {
            let inserted = sqlx::query_scalar::<_, i64>(
                "INSERT INTO users (id, number, name, credits, webhook_secret, created_at, operator, email, password_hash) \
                 SELECT $1, COALESCE(MAX(number), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM users RETURNING number",
            )
            .bind(user.id.as_str())
            .bind(&user.name)
            .bind(credits)
            .bind("")
            .bind(now)
            .bind(i64::from(operator))
            .bind(sign_in_email)
            .bind(sign_in_email.map(|_| reelfarm_domain::password::unusable_hash()))
            .fetch_one(&mut *tx)
            .await;
            match inserted {
                Ok(number) => break number,
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    if let Some(email) = sign_in_email {
                        if self.sign_in_of(email).await?.is_some() {
                            return Err(StoreError::Conflict(format!("another user signs in as {email}")));
                        }
                    }
                    if matches!(self.find_user(name).await, Ok(u) if u.name == name) || tries == 8 {
                        return Err(StoreError::Conflict(format!("a user named `{name}` exists already")));
                    }
                    tries += 1;
                    tx = self.begin().await?;
                }
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(group) = group {
            sqlx::query("INSERT INTO user_groups (id, name, credits, created_at) VALUES ($1, $2, 0, $3) ON CONFLICT (name) DO NOTHING")
                .bind(new_id())
                .bind(group)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO group_members (group_id, user_id, joined_at) \
                 SELECT id, $1, $2 FROM user_groups WHERE name = $3",
            )
            .bind(user.id.as_str())
            .bind(now)
            .bind(group)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(user)
    }

    #[tracing::instrument(name = "store::user", level = "debug", skip_all)]
    async fn user(&self, id: &UserId) -> Result<User> {
        let row = sqlx::query(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("user"))?;
        user_from(&row)
    }

    #[tracing::instrument(name = "store::set_sign_in", level = "debug", skip_all)]
    async fn set_sign_in(&self, user_id: &UserId, email: &str, password_hash: &str) -> Result<()> {
        let done = sqlx::query("UPDATE users SET email = $1, password_hash = $2 WHERE id = $3")
            .bind(email)
            .bind(password_hash)
            .bind(user_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::Conflict(format!("another user signs in as {email}"))
                } else {
                    e.into()
                }
            })?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Ok(())
    }

    #[tracing::instrument(name = "store::sign_in_of", level = "debug", skip_all)]
    async fn sign_in_of(&self, email: &str) -> Result<Option<(User, String)>> {
        let sql =
            format!("SELECT {USER_COLUMNS}, password_hash FROM users WHERE email = $1 AND password_hash IS NOT NULL");
        let Some(row) = sqlx::query(&sql).bind(email).fetch_optional(&self.pool).await? else { return Ok(None) };
        Ok(Some((user_from(&row)?, row.try_get("password_hash")?)))
    }

    #[tracing::instrument(name = "store::find_user", level = "debug", skip_all)]
    async fn find_user(&self, name_or_id: &str) -> Result<User> {
        let row = sqlx::query(&format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1 OR id = $1"))
            .bind(name_or_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("user"))?;
        user_from(&row)
    }

    #[tracing::instrument(name = "store::find_group", level = "debug", skip_all)]
    async fn find_group(&self, name_or_id: &str) -> Result<Group> {
        let row = sqlx::query("SELECT id, name, credits, created_at FROM user_groups WHERE name = $1 OR id = $1")
            .bind(name_or_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("group"))?;
        group_from(&row)
    }

    #[tracing::instrument(name = "store::groups_of", level = "debug", skip_all)]
    async fn groups_of(&self, user_id: &UserId) -> Result<Vec<Group>> {
        let rows = sqlx::query(
            "SELECT g.id, g.name, g.credits, g.created_at FROM user_groups g \
             JOIN group_members m ON m.group_id = g.id WHERE m.user_id = $1 ORDER BY m.joined_at, g.name",
        )
        .bind(user_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(group_from).collect()
    }

    #[tracing::instrument(name = "store::create_token", level = "debug", skip_all)]
    async fn create_token(&self, user_id: &UserId, days: u32) -> Result<(TokenRecord, String)> {
        self.create_named_token(user_id, "", days).await
    }

    #[tracing::instrument(name = "store::create_named_token", level = "debug", skip_all)]
    async fn create_named_token(&self, user_id: &UserId, name: &str, days: u32) -> Result<(TokenRecord, String)> {
        let new = token::generate();
        let now = now_ms();
        let record = TokenRecord {
            id: new_id(),
            user_id: user_id.clone(),
            name: name.to_string(),
            prefix: new.prefix,
            created_at: now,
            expires_at: now + i64::from(days) * 86_400_000,
            revoked_at: None,
            last_used_at: None,
        };
        sqlx::query(
            "INSERT INTO tokens (id, user_id, name, prefix, hash, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&record.id)
        .bind(record.user_id.as_str())
        .bind(&record.name)
        .bind(&record.prefix)
        .bind(&new.hash)
        .bind(record.created_at)
        .bind(record.expires_at)
        .execute(&self.pool)
        .await
        .map_err(missing_reference("user"))?;
        Ok((record, new.plaintext))
    }

    #[tracing::instrument(name = "store::authenticate", level = "debug", skip_all)]
    async fn authenticate(&self, presented: &str) -> Result<Option<(User, TokenRecord)>> {
        let Some(prefix) = token::prefix_of(presented) else { return Ok(None) };
        // One round trip: the candidates with their users.
        let rows = sqlx::query(
            "SELECT t.id, t.user_id, t.name, t.prefix, t.created_at, t.expires_at, t.revoked_at, t.last_used_at, t.hash, \
             u.number AS user_number, u.name AS user_name, u.credits AS user_credits, \
             u.created_at AS user_created_at, u.operator AS user_operator \
             FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.prefix = $1",
        )
        .bind(prefix)
        .fetch_all(&self.pool)
        .await?;
        let now = now_ms();
        for row in &rows {
            let hash: String = row.try_get("hash")?;
            if !token::verify(presented, &hash) {
                continue;
            }
            let mut record = token_from(row)?;
            if record.revoked_at.is_some() || record.expires_at <= now {
                return Ok(None);
            }
            if record.last_used_at.is_none_or(|at| at < now - LAST_USE_RESOLUTION_MS) {
                sqlx::query("UPDATE tokens SET last_used_at = $1 WHERE id = $2")
                    .bind(now)
                    .bind(&record.id)
                    .execute(&self.pool)
                    .await?;
                record.last_used_at = Some(now);
            }
            let user = User {
                id: record.user_id.clone(),
                number: row.try_get("user_number")?,
                name: row.try_get("user_name")?,
                credits: row.try_get("user_credits")?,
                created_at: row.try_get("user_created_at")?,
                operator: flag(row, "user_operator")?,
            };
            return Ok(Some((user, record)));
        }
        Ok(None)
    }

    #[tracing::instrument(name = "store::tokens_of", level = "debug", skip_all)]
    async fn tokens_of(&self, user_id: &UserId) -> Result<Vec<TokenRecord>> {
        let sql = format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE user_id = $1 ORDER BY created_at DESC, id DESC");
        let rows = sqlx::query(&sql).bind(user_id.as_str()).fetch_all(&self.pool).await?;
        rows.iter().map(token_from).collect()
    }

    #[tracing::instrument(name = "store::revoke_token_of", level = "debug", skip_all)]
    async fn revoke_token_of(&self, user_id: &UserId, id: &str) -> Result<()> {
        let done =
            sqlx::query("UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 AND user_id = $3")
                .bind(now_ms())
                .bind(id)
                .bind(user_id.as_str())
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("token"));
        }
        Ok(())
    }

    #[tracing::instrument(name = "store::revoke_token", level = "debug", skip_all)]
    async fn revoke_token(&self, id_or_prefix: &str) -> Result<TokenRecord> {
        let rows = if is_id(id_or_prefix) {
            sqlx::query(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = $1"))
                .bind(id_or_prefix)
                .fetch_all(&self.pool)
                .await?
        } else {
            let prefix = token::prefix_of(id_or_prefix).unwrap_or(id_or_prefix);
            if prefix.len() < token::TOKEN_MARKER.len() + 4 || !prefix.starts_with(token::TOKEN_MARKER) {
                return Err(StoreError::NotFound("token"));
            }
            let cut = &prefix[..prefix.len().min(11)];
            sqlx::query(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE prefix LIKE $1 || '%'"))
                .bind(cut)
                .fetch_all(&self.pool)
                .await?
        };
        let mut records = rows.iter().map(token_from).collect::<Result<Vec<_>>>()?;
        let record = match records.len() {
            0 => return Err(StoreError::NotFound("token")),
            1 => records.remove(0),
            n => return Err(StoreError::Conflict(format!("{n} tokens match `{id_or_prefix}`; give the token id"))),
        };
        let now = now_ms();
        sqlx::query("UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(&record.id)
            .execute(&self.pool)
            .await?;
        Ok(TokenRecord { revoked_at: record.revoked_at.or(Some(now)), ..record })
    }

    #[tracing::instrument(name = "store::set_credits", level = "debug", skip_all)]
    async fn set_credits(&self, who: &str, credits: i64) -> Result<Credits> {
        match self.find_user(who).await {
            Ok(user) => {
                sqlx::query("UPDATE users SET credits = $1 WHERE id = $2")
                    .bind(credits)
                    .bind(user.id.as_str())
                    .execute(&self.pool)
                    .await?;
                return Ok(Credits::User { id: user.id, name: user.name, credits });
            }
            Err(StoreError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        let group = self.find_group(who).await.map_err(|e| match e {
            StoreError::NotFound(_) => StoreError::NotFound("user or group"),
            e => e,
        })?;
        sqlx::query("UPDATE user_groups SET credits = $1 WHERE id = $2")
            .bind(credits)
            .bind(group.id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(Credits::Group { id: group.id, name: group.name, credits })
    }

    #[tracing::instrument(name = "store::stored_webhook_secret", level = "debug", skip_all)]
    async fn stored_webhook_secret(&self, user_id: &UserId) -> Result<String> {
        sqlx::query_scalar("SELECT webhook_secret FROM users WHERE id = $1")
            .bind(user_id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("user"))
    }

    #[tracing::instrument(name = "store::replace_webhook_secret", level = "debug", skip_all)]
    async fn replace_webhook_secret(&self, user_id: &UserId, expected: Option<&str>, new: &str) -> Result<bool> {
        let done =
            sqlx::query("UPDATE users SET webhook_secret = $1 WHERE id = $2 AND ($3 IS NULL OR webhook_secret = $3)")
                .bind(new)
                .bind(user_id.as_str())
                .bind(expected)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 && expected.is_none() {
            return Err(StoreError::NotFound("user"));
        }
        Ok(done.rows_affected() == 1)
    }
}
