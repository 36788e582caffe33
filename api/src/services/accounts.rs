//! Accounts as the console manages them: a user's own sign-in (e-mail and password), and
//! for operators every user and group — credits, memberships, new users and one-time
//! sign-in links. Whoever is not an operator finds no admin area (404).

use std::time::Duration;

use reelfarm_app::sessions::{self, NewSignIn, Session};
use reelfarm_app::{accounts, Actor, AppError};
use reelfarm_backends::store::{Account, GroupSummary};
use reelfarm_domain::account::User;
use reelfarm_domain::id::{GroupId, UserId};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::pagination::Page;
use crate::state::AppState;

/// Checks of the current password a user may make: a few, then one a minute.
const CHECKS_BURST: u32 = 5;
const CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// The e-mail address the caller signs in with, if any.
#[tracing::instrument(name = "accounts::email", skip_all, fields(user_id = %caller.user.id))]
pub async fn email(state: &AppState, caller: &Caller) -> Result<Option<String>> {
    Ok(accounts::email_of(state.backends.store(), &caller.user.id).await?)
}

/// Sets the e-mail address and password `session`'s user signs in with
/// ([`sessions::set_sign_in`]). The current password may be tried a few times, then once
/// a minute, as sign-ins may.
pub async fn set_sign_in(state: &AppState, session: &Session, new: &NewSignIn<'_>) -> Result<()> {
    let gate = async || {
        let limit = format!("current-password:{}", session.user.id);
        let checked = state.limits.check_every(state.backends.cache(), &limit, CHECK_INTERVAL, CHECKS_BURST).await;
        checked.map_err(|e| AppError::TryLater { seconds: e.retry_after().unwrap_or(CHECK_INTERVAL.as_secs()) })
    };
    Ok(sessions::set_sign_in(&state.backends, &state.hashing, session, new, gate).await?)
}

/// A page of every user with their e-mail address and groups, and every group.
#[tracing::instrument(name = "accounts::overview", skip_all, fields(user_id = %caller.user.id))]
pub async fn overview(state: &AppState, caller: &Caller, page: Page) -> Result<(Vec<Account>, Vec<GroupSummary>)> {
    let store = state.backends.store();
    Ok(accounts::overview(store, Actor::User(&caller.user), page.limit, page.offset()).await?)
}

/// What an operator asks a new user to be, as the admin area's form sends it.
pub struct NewAccount<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub credits: &'a str,
    pub group: &'a str,
    pub operator: bool,
}

/// Creates a user ([`accounts::create_user`]); returns it with a one-time sign-in link's
/// token for it.
#[tracing::instrument(name = "accounts::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(state: &AppState, caller: &Caller, new: &NewAccount<'_>) -> Result<(User, String)> {
    // Credits the form cannot read are refused with the other fields, as negative ones are.
    let credits = accounts::parse_credits(new.credits).unwrap_or(-1);
    let command = accounts::CreateUser {
        name: new.name.to_string(),
        group: Some(new.group.to_string()),
        credits,
        email: Some(new.email.to_string()),
        operator: new.operator,
    };
    let store = state.backends.store();
    let user = accounts::create_user(store, Actor::User(&caller.user), &command).await?;
    let (_, link) = accounts::sign_in_link(store, Actor::User(&caller.user), &user.id, accounts::LINK_TTL).await?;
    Ok((user, link))
}

/// Sets the credits of user or group `who` (id).
#[tracing::instrument(name = "accounts::set_credits", skip_all, fields(user_id = %caller.user.id))]
pub async fn set_credits(state: &AppState, caller: &Caller, who: &str, credits: &str) -> Result<()> {
    let credits = accounts::parse_credits(credits).map_err(|e| ApiError::validation(vec![e]))?;
    // Ids only: the form names users and groups by id, never by a name that could be both.
    if UserId::parse(who).is_none() && GroupId::parse(who).is_none() {
        return Err(ApiError::not_found("User or group"));
    }
    accounts::set_credits(state.backends.store(), Actor::User(&caller.user), who, credits).await?;
    Ok(())
}

/// Makes user `user_id` a member of the group named `group` (made if missing).
#[tracing::instrument(name = "accounts::join", skip_all, fields(user_id = %caller.user.id))]
pub async fn join(state: &AppState, caller: &Caller, user_id: &UserId, group: &str) -> Result<()> {
    Ok(accounts::join(state.backends.store(), Actor::User(&caller.user), user_id, group).await?)
}

/// Ends the membership of user `user_id` in group `group_id`.
#[tracing::instrument(name = "accounts::leave", skip_all, fields(user_id = %caller.user.id))]
pub async fn leave(state: &AppState, caller: &Caller, user_id: &UserId, group_id: &GroupId) -> Result<()> {
    Ok(accounts::leave(state.backends.store(), Actor::User(&caller.user), user_id, group_id).await?)
}

/// The name of user `user_id` and a one-time sign-in link's token for them, valid for
/// [`accounts::LINK_TTL`].
#[tracing::instrument(name = "accounts::sign_in_link", skip_all, fields(user_id = %caller.user.id))]
pub async fn sign_in_link(state: &AppState, caller: &Caller, user_id: &UserId) -> Result<(String, String)> {
    let store = state.backends.store();
    let (user, token) = accounts::sign_in_link(store, Actor::User(&caller.user), user_id, accounts::LINK_TTL).await?;
    Ok((user.name, token))
}
