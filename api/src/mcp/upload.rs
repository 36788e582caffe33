//! A file added to a library from its address (the tool `upload_file`): fetched by the
//! outbound client, which checks the address as it checks a job's, within the upload
//! limits, into a temporary file; then stored and converted as an upload is. A fetch
//! that fails leaves no object behind.

use reelfarm_app::assets;
use reelfarm_app::uploads::{self, UploadLimits};
use reelfarm_domain::asset::Asset;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::LibraryId;
use reelfarm_outbound::{FetchLimits, Outbound};
use tokio_util::io::ReaderStream;

use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

/// Stores the file at `url` as a new object named `filename` (else the address's last
/// segment) in `library` (else the caller's personal library).
pub async fn from_address(
    state: &AppState,
    caller: &Caller,
    url: &str,
    filename: Option<&str>,
    library: Option<LibraryId>,
) -> Result<Asset, ApiError> {
    let filename = filename.map(str::to_string).unwrap_or_else(|| name_in(url));
    let (store, user) = (state.backends.store(), &caller.user.id);
    let asset = assets::add(store, user, Some(&filename), library.as_ref()).await?;
    let limits = UploadLimits::of(&state.config);
    let fetch = FetchLimits { max_bytes: limits.max.unwrap_or(u64::MAX), timeout: limits.total };
    let path = std::env::temp_dir().join(format!("reelfarm-fetch-{}", asset.id));
    let stored = match Outbound::new(&state.config.ops.outbound_allow).fetch_to_file(url, &path, &fetch).await {
        Ok(fetched) => match tokio::fs::File::open(&path).await {
            Ok(file) => {
                uploads::receive(&state.backends, &limits, &asset.id, Some(fetched.bytes), ReaderStream::new(file))
                    .await
                    .map_err(ApiError::from)
            }
            Err(e) => Err(ApiError::internal(&e)),
        },
        Err(e) => Err(ApiError::validation(vec![FieldError::new("url", ErrorKey::Invalid, e.to_string())])),
    };
    let _ = tokio::fs::remove_file(&path).await;
    if stored.is_err() {
        let _ = assets::remove(store, state.backends.blobs(), user, &asset.id).await;
    }
    stored
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
