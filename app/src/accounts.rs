//! Users and groups as operators manage them, from the console's admin area or the admin
//! CLI: new users, credits, memberships, operators, console sign-in.

use std::time::Duration;

use reelfarm_backends::store::{Account, AccountStore, GroupSummary, NewUser, StoreError, UserStore};
use reelfarm_domain::account::{Credits, User};
use reelfarm_domain::id::{GroupId, UserId};
use reelfarm_domain::password;

use crate::{text, Actor, AppError, FieldError, Result};

/// Longest user or group name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// How long a sign-in link made for an operator stays valid, unless they say otherwise.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 3600);
/// Longest validity an operator may give a sign-in link.
pub const MAX_LINK_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A new user, as an operator asks for it.
#[derive(Debug, Clone, Default)]
pub struct CreateUser {
    pub name: String,
    /// A group to join (made if missing); blank for none.
    pub group: Option<String>,
    /// At least 0.
    pub credits: i64,
    /// The address they will sign in to the console with (set a password after a
    /// one-time link); blank for none.
    pub email: Option<String>,
    pub operator: bool,
}

/// [`CreateUser`] once checked: trimmed names and a normalised address.
struct Checked {
    name: String,
    group: Option<String>,
    email: Option<String>,
}

impl CreateUser {
    fn check(&self) -> std::result::Result<Checked, Vec<FieldError>> {
        let mut errors = Vec::new();
        let name = text::field("name", Some(&self.name), MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok();
        let email = match self.email.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(given) => {
                let email = password::normalize_email(given);
                if email.is_none() {
                    errors.push(FieldError::invalid("email", "is not an e-mail address"));
                }
                email
            }
        };
        if self.credits < 0 {
            errors.push(credits_problem());
        }
        let group = match self.group.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(group) => text::field("group", Some(group), MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok(),
        };
        match name {
            Some(name) if errors.is_empty() => Ok(Checked { name, group, email }),
            _ => Err(errors),
        }
    }
}

fn credits_problem() -> FieldError {
    FieldError::invalid("credits", "must be a whole number of at least 0")
}

/// Credits as an operator types them: a whole number of at least 0.
pub fn parse_credits(given: &str) -> std::result::Result<i64, FieldError> {
    match given.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(credits_problem()),
    }
}

/// Creates a user with everything [`CreateUser`] asks for, in one transaction.
#[tracing::instrument(name = "accounts::create_user", skip_all)]
pub async fn create_user(store: &impl UserStore, actor: Actor<'_>, new: &CreateUser) -> Result<User> {
    actor.require_operator()?;
    let checked = new.check().map_err(AppError::Invalid)?;
    let taken = |field: &str, what: &str| {
        AppError::Invalid(vec![FieldError::invalid(field, format!("is the {what} of another user"))])
    };
    if let Some(email) = &checked.email {
        if store.sign_in_of(email).await?.is_some() {
            return Err(taken("email", "address"));
        }
    }
    let user = NewUser {
        name: &checked.name,
        group: checked.group.as_deref(),
        credits: new.credits,
        operator: new.operator,
        sign_in_email: checked.email.as_deref(),
    };
    let user = store.create_account(&user).await.map_err(|e| match e {
        StoreError::Conflict(message) if message.contains("signs in as") => taken("email", "address"),
        StoreError::Conflict(_) => taken("name", "name"),
        e => e.into(),
    })?;
    tracing::info!(new_user = %user.id, operator = new.operator, "user created");
    Ok(user)
}

/// The user named `name_or_id`.
pub async fn find_user(store: &impl UserStore, name_or_id: &str) -> Result<User> {
    Ok(store.find_user(name_or_id).await?)
}

/// A one-time console sign-in link's token for user `user_id`, valid for `ttl` (at most
/// [`MAX_LINK_TTL`]).
#[tracing::instrument(name = "accounts::sign_in_link", skip_all)]
pub async fn sign_in_link(
    store: &(impl AccountStore + UserStore),
    actor: Actor<'_>,
    user_id: &UserId,
    ttl: Duration,
) -> Result<(User, String)> {
    actor.require_operator()?;
    if ttl.is_zero() || ttl > MAX_LINK_TTL {
        return Err(AppError::invalid("hours", "must be 1 to 720"));
    }
    let user = store.user(user_id).await?;
    let token = store.create_sign_in_link(user_id, ttl).await?;
    Ok((user, token))
}

/// Makes user `user_id` an operator, or no longer one.
#[tracing::instrument(name = "accounts::set_operator", skip_all)]
pub async fn set_operator(store: &impl AccountStore, actor: Actor<'_>, user_id: &UserId, operator: bool) -> Result<()> {
    actor.require_operator()?;
    Ok(store.set_operator(user_id, operator).await?)
}

/// Sets the address and password user `user_id` signs in with, as an operator does it
/// (no current password asked); returns the address as it was stored (normalised).
#[tracing::instrument(name = "accounts::set_password", skip_all)]
pub async fn set_password(
    store: &impl UserStore,
    actor: Actor<'_>,
    user_id: &UserId,
    email: &str,
    new: &str,
) -> Result<String> {
    actor.require_operator()?;
    let email = email_address(email)?;
    let new = new.to_string();
    let hash = tokio::task::spawn_blocking(move || password::hash(&new))
        .await
        .map_err(|e| AppError::Failed(format!("hashing the password: {e}")))?;
    write_sign_in(store, user_id, &email, hash).await?;
    Ok(email)
}

/// `email` normalised, or a field error naming `email`.
pub(crate) fn email_address(email: &str) -> Result<String> {
    password::normalize_email(email).ok_or_else(|| AppError::invalid("email", "is not an e-mail address"))
}

/// Stores `hash` (a field error naming `password` when it could not be made) as the
/// password `user_id` signs in with at `email`; another user's address is refused.
pub(crate) async fn write_sign_in(
    store: &impl UserStore,
    user_id: &UserId,
    email: &str,
    hash: std::result::Result<String, password::PasswordError>,
) -> Result<()> {
    let hash = hash.map_err(|e| AppError::invalid("password", e.to_string()))?;
    store.set_sign_in(user_id, email, &hash).await.map_err(|e| match e {
        StoreError::Conflict(_) => AppError::invalid("email", "is the address of another user"),
        e => e.into(),
    })
}

/// The address `user_id` signs in to the console with, if any.
pub async fn email_of(store: &impl AccountStore, user_id: &UserId) -> Result<Option<String>> {
    Ok(store.email_of(user_id).await?)
}

/// A page of every user with their e-mail address and groups, and every group, for an
/// operator.
pub async fn overview(
    store: &impl AccountStore,
    actor: Actor<'_>,
    limit: u32,
    offset: u64,
) -> Result<(Vec<Account>, Vec<GroupSummary>)> {
    actor.require_operator()?;
    Ok((store.accounts(limit, offset).await?, store.group_summaries().await?))
}

/// Sets the credits of the user or group `who` (a name or an id).
#[tracing::instrument(name = "accounts::set_credits", skip_all)]
pub async fn set_credits(store: &impl UserStore, actor: Actor<'_>, who: &str, credits: i64) -> Result<Credits> {
    actor.require_operator()?;
    if credits < 0 {
        return Err(AppError::Invalid(vec![credits_problem()]));
    }
    Ok(store.set_credits(who, credits).await?)
}

/// Makes user `user_id` a member of the group named `group` (made if missing).
#[tracing::instrument(name = "accounts::join", skip_all)]
pub async fn join(store: &impl AccountStore, actor: Actor<'_>, user_id: &UserId, group: &str) -> Result<()> {
    actor.require_operator()?;
    let group = text::field("group", Some(group), MAX_NAME_CHARS).map_err(|e| AppError::Invalid(vec![e]))?;
    store.join_group(user_id, &group).await?;
    Ok(())
}

/// Ends the membership of user `user_id` in group `group_id`.
#[tracing::instrument(name = "accounts::leave", skip_all)]
pub async fn leave(store: &impl AccountStore, actor: Actor<'_>, user_id: &UserId, group_id: &GroupId) -> Result<()> {
    actor.require_operator()?;
    match store.leave_group(user_id, group_id).await? {
        true => Ok(()),
        false => Err(AppError::NotFound("membership")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::error_key::ErrorKey;

    #[test]
    fn a_new_user_is_checked_field_by_field() {
        let new = CreateUser {
            name: " ann ".into(),
            group: Some("  ".into()),
            email: Some(" Ann@Example.COM ".into()),
            ..Default::default()
        };
        let checked = new.check().unwrap();
        assert_eq!(
            (checked.name.as_str(), checked.group, checked.email.as_deref()),
            ("ann", None, Some("ann@example.com"))
        );
        let bad = CreateUser {
            name: "a\u{7}b".into(),
            group: Some("g".repeat(101)),
            credits: -1,
            email: Some("nope".into()),
            operator: false,
        };
        let errors = bad.check().err().unwrap();
        let fields: Vec<(&str, ErrorKey)> = errors.iter().map(|e| (e.field.as_str(), e.key)).collect();
        assert_eq!(
            fields,
            [
                ("name", ErrorKey::Invalid),
                ("email", ErrorKey::Invalid),
                ("credits", ErrorKey::Invalid),
                ("group", ErrorKey::TooLong)
            ]
        );
        assert_eq!(parse_credits(" 7 "), Ok(7));
        assert!(parse_credits("1.5").is_err() && parse_credits("-1").is_err());
    }
}
