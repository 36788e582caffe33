//! Library objects (assets): starting an upload, reading, listing and deleting them.

use reelfarm_backends::store::AssetQuery;
use reelfarm_domain::asset::{Asset, AssetKind};
use reelfarm_domain::id::{AssetId, LibraryId};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::pagination::Page;
use crate::state::AppState;
use reelfarm_app::{libraries, AppError};

/// Longest file name accepted, in characters.
pub const MAX_FILENAME_CHARS: usize = 255;

/// An object recorded for upload, and the signed address to PUT its file to.
pub struct NewUpload {
    pub asset: Asset,
    pub upload_url: String,
}

/// Records an object named `filename` in `library_id` (the caller's personal library
/// when not given, else one the caller may edit) and signs the address of its upload.
#[tracing::instrument(name = "assets::add", skip_all, fields(user_id = %caller.user.id, library_id = ?library_id))]
pub async fn add(
    state: &AppState,
    caller: &Caller,
    filename: Option<&str>,
    library_id: Option<&LibraryId>,
) -> Result<NewUpload> {
    let filename =
        crate::text::field("filename", filename, MAX_FILENAME_CHARS).map_err(|e| ApiError::validation(vec![e]))?;
    let store = &state.backends.store;
    let library = match library_id {
        None => store.personal_library(&caller.user.id).await?,
        Some(id) => {
            let (library, editable) = match libraries::visible(store, &caller.user.id, id).await {
                Err(AppError::NotFound(_)) => return Err(ApiError::not_found_field("library_id", "Library")),
                visible => visible?,
            };
            if !editable {
                return Err(ApiError::forbidden("This library is read-only for you"));
            }
            library
        }
    };
    let asset = store.create_asset(&library.id, &caller.user.id, &filename).await?;
    let upload_url = crate::signing::upload_url(&state.config, &asset.id, reelfarm_domain::id::now_ms());
    Ok(NewUpload { asset, upload_url })
}

/// The asset `id` if the caller may see its library, with whether they may edit it.
#[tracing::instrument(name = "assets::visible", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn visible(state: &AppState, caller: &Caller, id: &AssetId) -> Result<(Asset, bool)> {
    let asset = state.backends.store.asset(id).await?;
    match libraries::visible(&state.backends.store, &caller.user.id, &asset.library_id).await {
        Ok((_, editable)) => Ok((asset, editable)),
        Err(AppError::NotFound(_)) => Err(ApiError::not_found("Asset")),
        Err(e) => Err(e.into()),
    }
}

/// One asset the caller may see.
#[tracing::instrument(name = "assets::get", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn get(state: &AppState, caller: &Caller, id: &AssetId) -> Result<Asset> {
    Ok(visible(state, caller, id).await?.0)
}

/// Longest label accepted, in characters.
pub const MAX_LABEL_CHARS: usize = 255;

/// Gives an asset of a library the caller may edit the label `label` (a text field of at
/// most [`MAX_LABEL_CHARS`] characters).
#[tracing::instrument(name = "assets::rename", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn rename(state: &AppState, caller: &Caller, id: &AssetId, label: Option<&str>) -> Result<Asset> {
    let label = crate::text::field("label", label, MAX_LABEL_CHARS).map_err(|e| ApiError::validation(vec![e]))?;
    let (asset, editable) = visible(state, caller, id).await?;
    if !editable {
        return Err(ApiError::forbidden("This library is read-only for you"));
    }
    Ok(state.backends.store.rename_asset(&asset.id, &label).await?)
}

/// Deletes an asset of a library the caller may edit, and every stored file of it.
#[tracing::instrument(name = "assets::remove", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn remove(state: &AppState, caller: &Caller, id: &AssetId) -> Result<Asset> {
    let (asset, editable) = visible(state, caller, id).await?;
    if !editable {
        return Err(ApiError::forbidden("This library is read-only for you"));
    }
    let asset = state.backends.store.delete_asset(&asset.id).await?;
    // The record is gone, so nothing refers to the files any more; a failure here leaves
    // unreachable blobs behind, which is logged rather than failing the request.
    if let Err(e) = state.backends.blobs.delete_prefix(&format!("{}/", asset.blob_prefix)).await {
        tracing::warn!(asset_id = %asset.id, error = %e, "blobs of a deleted asset were not removed");
    }
    Ok(asset)
}

/// A page of the assets of a library the caller may see, newest first; only those whose
/// label contains `text` (any case) when it is given.
#[tracing::instrument(name = "assets::list", skip_all, fields(user_id = %caller.user.id, library_id = %library_id))]
pub async fn list(
    state: &AppState,
    caller: &Caller,
    library_id: &LibraryId,
    text: Option<&str>,
    page: Page,
) -> Result<Vec<Asset>> {
    let (library, _) = libraries::visible(&state.backends.store, &caller.user.id, library_id).await?;
    let libraries = [library.id];
    let query =
        AssetQuery { libraries: &libraries, text, limit: page.limit, offset: page.offset(), ..Default::default() };
    Ok(state.backends.store.find_assets(&query).await?)
}

/// The newest `limit` ready assets of `kinds` in every library the caller may see: what a
/// form offers as a template variable's value.
#[tracing::instrument(name = "assets::choosable", skip_all, fields(user_id = %caller.user.id))]
pub async fn choosable(state: &AppState, caller: &Caller, kinds: &[AssetKind], limit: u32) -> Result<Vec<Asset>> {
    let store = &state.backends.store;
    let libraries: Vec<LibraryId> = store.visible_libraries(&caller.user.id).await?.into_iter().map(|l| l.id).collect();
    let query = AssetQuery { libraries: &libraries, kinds, ready_only: true, limit, ..Default::default() };
    Ok(store.find_assets(&query).await?)
}
