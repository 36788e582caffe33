//! Library objects (assets): recording one for upload, reading, renaming, listing and
//! deleting them. Who may see an asset is who may see its library; who may change it,
//! who may edit that library.

use reelfarm_backends::store::{AssetQuery, AssetStore, LibraryStore, UserStore};
use reelfarm_backends::Blobs;
use reelfarm_domain::asset::{Asset, AssetKind};
use reelfarm_domain::id::{AssetId, LibraryId, UserId};

use crate::{libraries, text, AppError, Result};

/// Longest file name accepted, in characters.
pub const MAX_FILENAME_CHARS: usize = 255;
/// Longest label accepted, in characters.
pub const MAX_LABEL_CHARS: usize = 255;

/// What `user` is told of a library they may see but not edit.
const READ_ONLY: &str = "This library is read-only for you";

/// Records an object named `filename` in `library_id` (`user`'s personal library when not
/// given, else one they may edit), waiting for its upload.
#[tracing::instrument(name = "assets::add", skip_all, fields(user_id = %user, library_id = ?library_id))]
pub async fn add(
    store: &(impl AssetStore + LibraryStore + UserStore),
    user: &UserId,
    filename: Option<&str>,
    library_id: Option<&LibraryId>,
) -> Result<Asset> {
    let filename = text::field("filename", filename, MAX_FILENAME_CHARS).map_err(|e| AppError::Invalid(vec![e]))?;
    let library = match library_id {
        None => store.personal_library(user).await?,
        Some(id) => {
            let (library, editable) = match libraries::visible(store, user, id).await {
                Err(AppError::NotFound(what)) => return Err(AppError::NotFoundField { field: "library_id", what }),
                visible => visible?,
            };
            if !editable {
                return Err(AppError::Forbidden(READ_ONLY.into()));
            }
            library
        }
    };
    Ok(store.create_asset(&library.id, user, &filename).await?)
}

/// The asset `id` if `user` may see its library, with whether they may edit it.
#[tracing::instrument(name = "assets::visible", skip_all, fields(user_id = %user, id = %id))]
pub async fn visible(
    store: &(impl AssetStore + LibraryStore + UserStore),
    user: &UserId,
    id: &AssetId,
) -> Result<(Asset, bool)> {
    let asset = store.asset(id).await?;
    match libraries::visible(store, user, &asset.library_id).await {
        Ok((_, editable)) => Ok((asset, editable)),
        Err(AppError::NotFound(_)) => Err(AppError::NotFound("asset")),
        Err(e) => Err(e),
    }
}

/// The asset `id` if `user` may edit its library.
async fn editable(store: &(impl AssetStore + LibraryStore + UserStore), user: &UserId, id: &AssetId) -> Result<Asset> {
    match visible(store, user, id).await? {
        (asset, true) => Ok(asset),
        (_, false) => Err(AppError::Forbidden(READ_ONLY.into())),
    }
}

/// One asset `user` may see.
pub async fn get(store: &(impl AssetStore + LibraryStore + UserStore), user: &UserId, id: &AssetId) -> Result<Asset> {
    Ok(visible(store, user, id).await?.0)
}

/// Gives an asset of a library `user` may edit the label `label` (a text field of at most
/// [`MAX_LABEL_CHARS`] characters).
#[tracing::instrument(name = "assets::rename", skip_all, fields(user_id = %user, id = %id))]
pub async fn rename(
    store: &(impl AssetStore + LibraryStore + UserStore),
    user: &UserId,
    id: &AssetId,
    label: Option<&str>,
) -> Result<Asset> {
    let label = text::field("label", label, MAX_LABEL_CHARS).map_err(|e| AppError::Invalid(vec![e]))?;
    let asset = editable(store, user, id).await?;
    Ok(store.rename_asset(&asset.id, &label).await?)
}

/// Deletes an asset of a library `user` may edit, and every stored file of it.
#[tracing::instrument(name = "assets::remove", skip_all, fields(user_id = %user, id = %id))]
pub async fn remove(
    store: &(impl AssetStore + LibraryStore + UserStore),
    blobs: &Blobs,
    user: &UserId,
    id: &AssetId,
) -> Result<Asset> {
    let asset = editable(store, user, id).await?;
    let asset = store.delete_asset(&asset.id).await?;
    // The record is gone, so nothing refers to the files any more; a failure here leaves
    // unreachable blobs behind, which is logged rather than failing the request.
    if let Err(e) = blobs.delete_prefix(&format!("{}/", asset.blob_prefix)).await {
        tracing::warn!(asset_id = %asset.id, error = %e, "blobs of a deleted asset were not removed");
    }
    Ok(asset)
}

/// `limit` assets from `offset` of a library `user` may see, newest first; only those
/// whose label contains `text` (any case) when it is given.
#[tracing::instrument(name = "assets::list", skip_all, fields(user_id = %user, library_id = %library_id))]
pub async fn list(
    store: &(impl AssetStore + LibraryStore + UserStore),
    user: &UserId,
    library_id: &LibraryId,
    text: Option<&str>,
    limit: u32,
    offset: u64,
) -> Result<Vec<Asset>> {
    let (library, _) = libraries::visible(store, user, library_id).await?;
    let libraries = [library.id];
    let query = AssetQuery { libraries: &libraries, text, limit, offset, ..Default::default() };
    Ok(store.find_assets(&query).await?)
}

/// The newest `limit` ready assets of `kinds` in every library `user` may see: what a form
/// offers as a template variable's value.
#[tracing::instrument(name = "assets::choosable", skip_all, fields(user_id = %user))]
pub async fn choosable(
    store: &(impl AssetStore + LibraryStore),
    user: &UserId,
    kinds: &[AssetKind],
    limit: u32,
) -> Result<Vec<Asset>> {
    let libraries: Vec<LibraryId> = store.visible_libraries(user).await?.into_iter().map(|l| l.id).collect();
    let query = AssetQuery { libraries: &libraries, kinds, ready_only: true, limit, ..Default::default() };
    Ok(store.find_assets(&query).await?)
}
