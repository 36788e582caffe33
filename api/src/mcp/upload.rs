//! A file added to a library from its address (the tool `upload_file`): fetched by the
//! outbound client, which checks the address as it checks a job's, and streamed into the
//! blob store as an upload's body is, within the upload limits: the quota is checked
//! before the first byte, the size as the bytes come, a server that sends nothing for the
//! upload idle time (60 s by default) is dropped, and nothing is written to local disk.
//! Each account fetches at most [`FETCHES_PER_ACCOUNT`] addresses at once, across every
//! api process. A fetch whose client left stops. A fetch that fails or stops leaves no
//! object behind.

use std::time::Duration;

use reelfarm_app::assets;
use reelfarm_app::uploads::{self, UploadLimits};
use reelfarm_backends::store::CreditStore;
use reelfarm_backends::Cache;
use reelfarm_domain::asset::Asset;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::LibraryId;
use reelfarm_outbound::{FetchLimits, Outbound};
use tokio_util::sync::CancellationToken;

use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

/// Addresses one account may be fetching at once.
pub const FETCHES_PER_ACCOUNT: usize = 2;

/// Stores the file at `url` as a new object named `filename` (else the address's last
/// segment) in `library` (else the caller's personal library).
pub async fn from_address(
    state: &AppState,
    caller: &Caller,
    url: &str,
    filename: Option<&str>,
    library: Option<LibraryId>,
    left: &CancellationToken,
) -> Result<Asset, ApiError> {
    let filename = filename.map(str::to_string).unwrap_or_else(|| name_in(url));
    let (store, user) = (state.backends.store(), &caller.user.id);
    let limits = UploadLimits::of(&state.config);
    let account = store.account_of(user).await?;
    let Some(_slot) = Slot::take(state.backends.cache(), &account, limits.total).await? else {
        let message = format!(
            "at most {FETCHES_PER_ACCOUNT} files are fetched at once for an account; try again when one is done"
        );
        return Err(ApiError::validation(vec![FieldError::new("url", ErrorKey::RateLimited, message)]));
    };
    let asset = assets::add(store, user, Some(&filename), library.as_ref()).await?;
    let fetch = FetchLimits { max_bytes: limits.max.unwrap_or(u64::MAX), timeout: limits.total, idle: limits.idle };
    let stored = async {
        match Outbound::new(&state.config.ops.outbound_allow).fetch_stream(url, &fetch).await {
            Ok((opened, body)) => {
                uploads::receive(&state.backends, &limits, &asset.id, opened.length, body).await.map_err(ApiError::from)
            }
            Err(e) => Err(ApiError::validation(vec![FieldError::new("url", ErrorKey::Invalid, e.to_string())])),
        }
    };
    let stored = tokio::select! {
        stored = stored => stored,
        // Nobody waits for it any more: the fetch stops, and its object goes.
        () = left.cancelled() => Err(ApiError::invalid_request("The client left; the fetch was stopped")),
    };
    if stored.is_err() {
        let _ = assets::remove(store, state.backends.blobs(), user, &asset.id).await;
    }
    stored
}

/// One of an account's [`FETCHES_PER_ACCOUNT`] fetch slots, a key in the shared cache
/// held until dropped (or until it expires, should the process die holding it).
struct Slot {
    cache: Cache,
    key: String,
}

impl Slot {
    /// A free slot of `account`'s, held for at most `hold`; `None` when all are taken.
    async fn take(cache: &Cache, account: &str, hold: Duration) -> Result<Option<Slot>, ApiError> {
        for i in 0..FETCHES_PER_ACCOUNT {
            let key = format!("mcp-fetch:{account}:{i}");
            if cache
                .set_if_absent(&key, b"1", hold + Duration::from_secs(60))
                .await
                .map_err(|e| ApiError::internal(&e))?
            {
                return Ok(Some(Slot { cache: cache.clone(), key }));
            }
        }
        Ok(None)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (cache, key) = (self.cache.clone(), std::mem::take(&mut self.key));
        tokio::spawn(async move {
            if let Err(e) = cache.delete(&key).await {
                tracing::warn!(error = %e, %key, "a fetch slot was not given back; it expires by itself");
            }
        });
    }
}

/// The last segment of an address's path (`file` when it has none).
fn name_in(url: &str) -> String {
    let path = url::Url::parse(url).map(|u| u.path().to_string()).unwrap_or_default();
    let last = path.rsplit('/').next().unwrap_or_default();
    if last.is_empty() {
        "file".into()
    } else {
        last.into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_is_named_after_its_address() {
        assert_eq!(super::name_in("https://example.com/media/photo.jpg?x=1"), "photo.jpg");
        assert_eq!(super::name_in("https://example.com/"), "file");
        assert_eq!(super::name_in("not an address"), "file");
    }
}
