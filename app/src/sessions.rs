//! Console sessions: e-mail and password sign-in, sessions kept server-side in
//! the cache port (memory or Redis: every api replica sees them), listed per user and
//! ended one at a time or everywhere.
//!
//! The cookie holds a random 32-byte token; the cache keeps only its SHA-256, so a copy
//! of the cache lets nobody sign in. Each session carries its CSRF token. "Sign out
//! everywhere" moves the user's epoch: sessions made before it are refused, whatever the
//! per-user list (kept for display, read-modify-write) says.

use std::time::Duration;

use reelfarm_backends::store::{AccountStore, StoreError, UserStore};
use reelfarm_backends::Backends;
use reelfarm_domain::account::User;
use reelfarm_domain::id::{now_ms, UserId};
use reelfarm_domain::password;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::accounts;
use crate::error::cache_unavailable;
use crate::hashing::Hashing;
use crate::{AppError, Result};

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(14 * 24 * 3600);
/// Sign-in attempts allowed per e-mail address: a burst, then one a minute (counted by
/// the API, before [`sign_in`]).
pub const ATTEMPTS_BURST: u32 = 10;
pub const ATTEMPT_INTERVAL: Duration = Duration::from_secs(60);

/// A session as the cache keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    user_id: UserId,
    csrf: String,
    created_at: i64,
    user_agent: String,
    address: String,
    /// Started by a one-time sign-in link (the password may be set without the old one).
    #[serde(default)]
    by_link: bool,
}

/// A signed-in visitor's session.
#[derive(Debug, Clone)]
pub struct Session {
    /// Names the session in lists (a prefix of its key, not the cookie's token).
    pub id: String,
    pub user: User,
    /// What every state-changing request of this session must carry.
    pub csrf: String,
    /// Started by a one-time sign-in link.
    pub by_link: bool,
}

/// One of a user's sessions, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    pub id: String,
    /// The session's cache key (a hash of its token: it signs nobody in).
    key: String,
    pub created_at: i64,
    pub user_agent: String,
    pub address: String,
}

/// Where a sign-in comes from, remembered with the session.
pub struct Client<'a> {
    pub address: Option<std::net::IpAddr>,
    pub user_agent: &'a str,
}

fn key_of(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn session_key(key: &str) -> String {
    format!("session:{key}")
}

fn list_key(user_id: &UserId) -> String {
    format!("sessions-of:{user_id}")
}

fn epoch_key(user_id: &UserId) -> String {
    format!("session-epoch:{user_id}")
}

/// The public id of the session whose key is `key`.
fn listed_id(key: &str) -> String {
    key[..16].to_string()
}

/// Checks `email` (normalized) and `password`; on success starts a session and returns
/// it with the token for the cookie. Failures say only that the pair is wrong (the API
/// counts attempts per client address and per e-mail address first).
#[tracing::instrument(name = "sessions::sign_in", skip_all)]
pub async fn sign_in(
    backends: &Backends,
    hashing: &Hashing,
    email: &str,
    password: &str,
    client: Client<'_>,
) -> Result<(Session, String)> {
    let email = reelfarm_domain::password::normalize_email(email).unwrap_or_default();
    let found = backends.store().sign_in_of(&email).await?;
    // An unknown address is checked against a hash of no one's password, so that it
    // takes as long to refuse as a wrong password.
    let hash = match &found {
        Some((_, hash)) => hash.clone(),
        None => reelfarm_domain::password::unusable_hash().to_string(),
    };
    let password = password.to_string();
    let matches = hashing.run(move || reelfarm_domain::password::verify(&password, &hash)).await?;
    match (found, matches) {
        (Some((user, _)), true) => start(backends, user, client, false).await,
        _ => Err(AppError::Unauthenticated("The e-mail address or the password is wrong".into())),
    }
}

/// Signs in with the one-time link of `token` (see `reelfarm admin user link`): a session
/// like [`sign_in`]'s.
#[tracing::instrument(name = "sessions::sign_in_with_link", skip_all)]
pub async fn sign_in_with_link(backends: &Backends, token: &str, client: Client<'_>) -> Result<(Session, String)> {
    match backends.store().use_sign_in_link(token).await? {
        Some(user) => start(backends, user, client, true).await,
        None => Err(AppError::Unauthenticated(
            "This sign-in link is used, expired or unknown; ask an operator for a new one".into(),
        )),
    }
}

/// Starts a session of `user`; returns it with the token for the cookie.
async fn start(backends: &Backends, user: User, client: Client<'_>, by_link: bool) -> Result<(Session, String)> {
    let cache = backends.cache();
    let token = reelfarm_domain::token::random_base62(43);
    let key = key_of(&token);
    let stored = Stored {
        user_id: user.id.clone(),
        csrf: reelfarm_domain::token::random_base62(32),
        created_at: now_ms(),
        user_agent: client.user_agent.chars().take(200).collect(),
        address: client.address.map(|a| a.to_string()).unwrap_or_default(),
        by_link,
    };
    let bytes = serde_json::to_vec(&stored).expect("sessions serialize");
    cache.set(&session_key(&key), &bytes, SESSION_TTL).await.map_err(cache_unavailable)?;
    let mut listed = list(backends, &user.id).await?;
    listed.push(Listed {
        id: listed_id(&key),
        key: key.clone(),
        created_at: stored.created_at,
        user_agent: stored.user_agent.clone(),
        address: stored.address.clone(),
    });
    save_list(backends, &user.id, &listed).await?;
    let session = Session { id: listed_id(&key), user, csrf: stored.csrf, by_link };
    Ok((session, token))
}

/// The session of the cookie's `token`, if it is one and still valid.
#[tracing::instrument(name = "sessions::current", skip_all)]
pub async fn current(backends: &Backends, token: &str) -> Result<Option<Session>> {
    let cache = backends.cache();
    let key = key_of(token);
    let Some(bytes) = cache.get(&session_key(&key)).await.map_err(cache_unavailable)? else { return Ok(None) };
    let Ok(stored) = serde_json::from_slice::<Stored>(&bytes) else { return Ok(None) };
    if stored.created_at <= epoch(backends, &stored.user_id).await? {
        return Ok(None);
    }
    let user = match backends.store().user(&stored.user_id).await {
        Ok(user) => user,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(Some(Session { id: listed_id(&key), user, csrf: stored.csrf, by_link: stored.by_link }))
}

/// The user's sessions, oldest first.
#[tracing::instrument(name = "sessions::list", skip_all)]
pub async fn list(backends: &Backends, user_id: &UserId) -> Result<Vec<Listed>> {
    let cache = backends.cache();
    let epoch = epoch(backends, user_id).await?;
    let listed: Vec<Listed> = match cache.get(&list_key(user_id)).await.map_err(cache_unavailable)? {
        Some(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
        None => Vec::new(),
    };
    let oldest = now_ms() - SESSION_TTL.as_millis() as i64;
    Ok(listed.into_iter().filter(|l| l.created_at > epoch && l.created_at > oldest).collect())
}

/// Ends the session named `id` (from [`list`]) of `user_id`; ending one that is gone
/// already changes nothing.
#[tracing::instrument(name = "sessions::end", skip_all)]
pub async fn end(backends: &Backends, user_id: &UserId, id: &str) -> Result<()> {
    let mut listed = list(backends, user_id).await?;
    if let Some(ended) = listed.iter().find(|l| l.id == id) {
        backends.cache().delete(&session_key(&ended.key)).await.map_err(cache_unavailable)?;
    }
    listed.retain(|l| l.id != id);
    save_list(backends, user_id, &listed).await
}

/// Ends the session of the cookie's `token` (signing out).
#[tracing::instrument(name = "sessions::sign_out", skip_all)]
pub async fn sign_out(backends: &Backends, session: &Session, token: &str) -> Result<()> {
    backends.cache().delete(&session_key(&key_of(token))).await.map_err(cache_unavailable)?;
    end(backends, &session.user.id, &session.id).await
}

/// The e-mail address and password a signed-in user asks to sign in with from now on.
pub struct NewSignIn<'a> {
    pub email: &'a str,
    pub password: &'a str,
    /// Checked when a password is set, unless the session began with a one-time link.
    pub current_password: &'a str,
}

/// Sets the e-mail address and password `session`'s user signs in with. The current
/// password is asked for when one is set, unless the session began with a one-time link
/// (which is how a forgotten password is replaced); each check of it first passes `gate`
/// (the API's rate limit, as for sign-ins). The user's other sessions end.
#[tracing::instrument(name = "sessions::set_sign_in", skip_all, fields(user_id = %session.user.id))]
pub async fn set_sign_in(
    backends: &Backends,
    hashing: &Hashing,
    session: &Session,
    new: &NewSignIn<'_>,
    gate: impl AsyncFnOnce() -> Result<()>,
) -> Result<()> {
    let email = accounts::email_address(new.email)?;
    let store = backends.store();
    if !session.by_link {
        let stored = match store.email_of(&session.user.id).await? {
            Some(known) => store.sign_in_of(&known).await?.map(|(_, hash)| hash),
            None => None,
        };
        if let Some(hash) = stored {
            gate().await?;
            let current = new.current_password.to_string();
            if !hashing.run(move || password::verify(&current, &hash)).await? {
                return Err(AppError::invalid("current_password", "is wrong"));
            }
        }
    }
    let password = new.password.to_string();
    let hash = hashing.run(move || password::hash(&password)).await?;
    accounts::write_sign_in(store, &session.user.id, &email, hash).await?;
    // Whoever signed in with the old password is signed out.
    end_others(backends, &session.user.id, &session.id).await
}

/// Ends every session of the user but `keep` (after a password change).
#[tracing::instrument(name = "sessions::end_others", skip_all)]
pub async fn end_others(backends: &Backends, user_id: &UserId, keep: &str) -> Result<()> {
    let listed = list(backends, user_id).await?;
    for other in listed.iter().filter(|l| l.id != keep) {
        backends.cache().delete(&session_key(&other.key)).await.map_err(cache_unavailable)?;
    }
    let kept: Vec<Listed> = listed.into_iter().filter(|l| l.id == keep).collect();
    save_list(backends, user_id, &kept).await
}

/// Ends every session of the user, this one included.
#[tracing::instrument(name = "sessions::end_all", skip_all)]
pub async fn end_all(backends: &Backends, user_id: &UserId) -> Result<()> {
    let cache = backends.cache();
    let now = now_ms().to_string();
    cache.set(&epoch_key(user_id), now.as_bytes(), SESSION_TTL).await.map_err(cache_unavailable)?;
    cache.delete(&list_key(user_id)).await.map_err(cache_unavailable)
}

/// Sessions of `user_id` made at or before this time (Unix ms) are ended.
async fn epoch(backends: &Backends, user_id: &UserId) -> Result<i64> {
    let stored = backends.cache().get(&epoch_key(user_id)).await.map_err(cache_unavailable)?;
    Ok(stored.and_then(|b| String::from_utf8(b).ok()).and_then(|s| s.parse().ok()).unwrap_or(0))
}

async fn save_list(backends: &Backends, user_id: &UserId, listed: &[Listed]) -> Result<()> {
    let bytes = serde_json::to_vec(listed).expect("session lists serialize");
    backends.cache().set(&list_key(user_id), &bytes, SESSION_TTL).await.map_err(cache_unavailable)
}
