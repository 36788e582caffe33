//! Accounts as the console manages them: a user's own sign-in (e-mail and password), and
//! for operators every user and group — credits, memberships, new users and one-time
//! sign-in links. Whoever is not an operator finds no admin area (404).

use std::time::Duration;

use reelfarm_backends::store::{Account, GroupSummary, StoreError, User};
use reelfarm_domain::id::{GroupId, UserId};
use reelfarm_domain::password;

use super::sessions::Session;
use super::Result;
use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::pagination::Page;
use crate::state::AppState;

/// How long a sign-in link made in the admin area stays valid.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 3600);
/// Checks of the current password a user may make: a few, then one a minute.
const CHECKS_BURST: u32 = 5;
const CHECK_INTERVAL: Duration = Duration::from_secs(60);
/// Longest user or group name, in characters.
const MAX_NAME_CHARS: usize = 100;

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::validation(vec![FieldError::new(field, "error.invalid", message)])
}

/// Hashes `new` off the async threads; a 400 naming `password` when it is too short or
/// too long.
async fn hashed(state: &AppState, new: &str) -> Result<String> {
    let new = new.to_string();
    state.hashing.run(move || password::hash(&new)).await?.map_err(|e| invalid("password", e.to_string()))
}

/// The e-mail address the caller signs in with, if any.
#[tracing::instrument(name = "accounts::email", skip_all, fields(user_id = %caller.user.id))]
pub async fn email(state: &AppState, caller: &Caller) -> Result<Option<String>> {
    Ok(state.backends.store.email_of(&caller.user.id).await?)
}

/// Sets the e-mail address and password `session`'s user signs in with. The current
/// password is asked for when one is set (a few tries, then one a minute), unless the
/// session began with a one-time link (which is how a forgotten password is replaced).
/// The user's other sessions end.
#[tracing::instrument(name = "accounts::set_sign_in", skip_all, fields(user_id = %session.user.id))]
pub async fn set_sign_in(
    state: &AppState,
    session: &Session,
    email: &str,
    new_password: &str,
    current_password: &str,
) -> Result<()> {
    let email = password::normalize_email(email).ok_or_else(|| invalid("email", "is not an e-mail address"))?;
    let store = &state.backends.store;
    if !session.by_link {
        let known = store.email_of(&session.user.id).await?;
        let stored = match known {
            Some(known) => store.sign_in_of(&known).await?.map(|(_, hash)| hash),
            None => None,
        };
        if let Some(hash) = stored {
            // Guessing the password through this form is limited as sign-ins are.
            let limit = format!("current-password:{}", session.user.id);
            state.limits.check_every(&state.backends.cache, &limit, CHECK_INTERVAL, CHECKS_BURST).await?;
            let current = current_password.to_string();
            let matches = state.hashing.run(move || password::verify(&current, &hash)).await?;
            if !matches {
                return Err(invalid("current_password", "is wrong"));
            }
        }
    }
    let hash = hashed(state, new_password).await?;
    store.set_sign_in(&session.user.id, &email, &hash).await.map_err(|e| match e {
        StoreError::Conflict(_) => invalid("email", "is the address of another user"),
        e => e.into(),
    })?;
    // Whoever signed in with the old password is signed out.
    super::sessions::end_others(state, &session.user.id, &session.id).await
}

/// Refuses callers who are not operators, as if there were nothing there.
fn operator_only(caller: &Caller) -> Result<()> {
    if caller.user.operator {
        Ok(())
    } else {
        Err(ApiError::not_found("Page"))
    }
}

/// A page of every user with their e-mail address and groups, and every group.
#[tracing::instrument(name = "accounts::overview", skip_all, fields(user_id = %caller.user.id))]
pub async fn overview(state: &AppState, caller: &Caller, page: Page) -> Result<(Vec<Account>, Vec<GroupSummary>)> {
    operator_only(caller)?;
    let store = &state.backends.store;
    Ok((store.accounts(page.limit, page.offset()).await?, store.group_summaries().await?))
}

/// What an operator asks a new user to be.
pub struct NewAccount<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub credits: &'a str,
    pub group: &'a str,
    pub operator: bool,
}

/// Creates a user; returns it with a one-time sign-in link's token for it.
#[tracing::instrument(name = "accounts::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(state: &AppState, caller: &Caller, new: &NewAccount<'_>) -> Result<(User, String)> {
    operator_only(caller)?;
    let mut errors = Vec::new();
    let name = crate::text::field("name", Some(new.name), MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok();
    let email = match new.email.trim() {
        "" => None,
        given => {
            let email = password::normalize_email(given);
            if email.is_none() {
                errors.push(FieldError::new("email", "error.invalid", "is not an e-mail address"));
            }
            email
        }
    };
    let credits = parse_credits(new.credits).map_err(|e| errors.push(e)).ok();
    let group = match new.group.trim() {
        "" => None,
        _ => crate::text::field("group", Some(new.group), MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok(),
    };
    let (Some(name), Some(credits), true) = (name, credits, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let store = &state.backends.store;
    if let Some(email) = &email {
        if store.sign_in_of(email).await?.is_some() {
            return Err(invalid("email", "is the address of another user"));
        }
    }
    let user = store.create_user(&name, group.as_deref(), credits).await.map_err(|e| match e {
        StoreError::Conflict(_) => invalid("name", "is the name of another user"),
        e => e.into(),
    })?;
    if new.operator {
        store.set_operator(&user.id, true).await?;
    }
    if let Some(email) = email {
        // No password yet: the user sets one after signing in with the link.
        store.set_sign_in(&user.id, &email, password::unusable_hash()).await?;
    }
    tracing::info!(new_user = %user.id, operator = new.operator, "user created in the console");
    let link = store.create_sign_in_link(&user.id, LINK_TTL).await?;
    Ok((user, link))
}

fn parse_credits(given: &str) -> std::result::Result<i64, FieldError> {
    match given.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(FieldError::new("credits", "error.invalid", "must be a whole number of at least 0")),
    }
}

/// Sets the credits of user or group `who` (id).
#[tracing::instrument(name = "accounts::set_credits", skip_all, fields(user_id = %caller.user.id))]
pub async fn set_credits(state: &AppState, caller: &Caller, who: &str, credits: &str) -> Result<()> {
    operator_only(caller)?;
    let credits = parse_credits(credits).map_err(|e| ApiError::validation(vec![e]))?;
    let known = UserId::parse(who).is_some() || GroupId::parse(who).is_some();
    if !known {
        return Err(ApiError::not_found("User or group"));
    }
    state.backends.store.set_credits(who, credits).await?;
    Ok(())
}

/// Makes user `user_id` a member of the group named `group` (made if missing).
#[tracing::instrument(name = "accounts::join", skip_all, fields(user_id = %caller.user.id))]
pub async fn join(state: &AppState, caller: &Caller, user_id: &UserId, group: &str) -> Result<()> {
    operator_only(caller)?;
    let group = crate::text::field("group", Some(group), MAX_NAME_CHARS).map_err(|e| ApiError::validation(vec![e]))?;
    state.backends.store.join_group(user_id, &group).await?;
    Ok(())
}

/// Ends the membership of user `user_id` in group `group_id`.
#[tracing::instrument(name = "accounts::leave", skip_all, fields(user_id = %caller.user.id))]
pub async fn leave(state: &AppState, caller: &Caller, user_id: &UserId, group_id: &GroupId) -> Result<()> {
    operator_only(caller)?;
    if !state.backends.store.leave_group(user_id, group_id).await? {
        return Err(ApiError::not_found("Membership"));
    }
    Ok(())
}

/// The name of user `user_id` and a one-time sign-in link's token for them, valid for
/// [`LINK_TTL`].
#[tracing::instrument(name = "accounts::sign_in_link", skip_all, fields(user_id = %caller.user.id))]
pub async fn sign_in_link(state: &AppState, caller: &Caller, user_id: &UserId) -> Result<(String, String)> {
    operator_only(caller)?;
    let store = &state.backends.store;
    let user = store.user(user_id).await?;
    Ok((user.name, store.create_sign_in_link(user_id, LINK_TTL).await?))
}
