//! Signing in to the console: the attempts counted per client address (and per e-mail
//! address for passwords) before the use case (`reelfarm_app::sessions`) looks at them;
//! past the limits even the right password is refused, so guessing gains nothing by going
//! on.

use reelfarm_app::sessions::{self, Client, Session, ATTEMPTS_BURST, ATTEMPT_INTERVAL};

use super::Result;
use crate::state::AppState;

/// Signs in with `email` and `password`; the session and the token for the cookie.
pub async fn sign_in(state: &AppState, email: &str, password: &str, client: Client<'_>) -> Result<(Session, String)> {
    let normalized = reelfarm_domain::password::normalize_email(email).unwrap_or_default();
    state.limits.check_client(state, "signin", client.address).await?;
    let limit = format!("signin:{normalized}");
    state.limits.check_every(state.backends.cache(), &limit, ATTEMPT_INTERVAL, ATTEMPTS_BURST).await?;
    Ok(sessions::sign_in(&state.backends, &state.hashing, &normalized, password, client).await?)
}

/// Signs in with the one-time link of `token` (see `reelfarm admin user link`).
pub async fn sign_in_with_link(state: &AppState, token: &str, client: Client<'_>) -> Result<(Session, String)> {
    state.limits.check_client(state, "signin", client.address).await?;
    Ok(sessions::sign_in_with_link(&state.backends, token, client).await?)
}
