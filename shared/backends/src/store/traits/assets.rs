//! Libraries and the assets in them.

use std::future::Future;

use reelfarm_domain::asset::{Asset, Conversion};
use reelfarm_domain::id::{AssetId, GroupId, LibraryId, UserId};

use crate::store::{AssetQuery, Library, LibraryKind, LibraryOwner, Result};

/// Libraries of assets and who may see and edit them. (`libraries.rs`)
pub trait LibraryStore {
    /// Creates a library. Personal libraries belong to a user, group libraries to a
    /// group, public and stock libraries to the operator.
    fn create_library(
        &self,
        name: &str,
        kind: LibraryKind,
        owner: LibraryOwner,
    ) -> impl Future<Output = Result<Library>> + Send;

    fn library(&self, id: &LibraryId) -> impl Future<Output = Result<Library>> + Send;

    /// The user's default personal library, created on first use.
    fn personal_library(&self, user_id: &UserId) -> impl Future<Output = Result<Library>> + Send;

    /// The group's default library, created on first use.
    fn group_library(&self, group_id: &GroupId, group_name: &str) -> impl Future<Output = Result<Library>> + Send;

    /// Every library `user_id` may see: personal ones, those of the user's groups, then
    /// public and stock ones; each kind in creation order.
    fn visible_libraries(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<Library>>> + Send;
}

/// Assets: uploads, their renditions and what each user stores. (`assets.rs`)
pub trait AssetStore {
    /// Records a new asset awaiting its upload. Its blobs will live under an unguessable
    /// prefix, so their public addresses can be handed out without a token.
    fn create_asset(
        &self,
        library_id: &LibraryId,
        owner_user_id: &UserId,
        filename: &str,
    ) -> impl Future<Output = Result<Asset>> + Send;

    fn asset(&self, id: &AssetId) -> impl Future<Output = Result<Asset>> + Send;

    /// The assets of `ids` that exist, in no particular order: a few queries however many
    /// ids a request names.
    fn assets(&self, ids: &[AssetId]) -> impl Future<Output = Result<Vec<Asset>>> + Send;

    /// The asset a document names (a template's source, a job's value): `NotFound` when
    /// the name is not of our ids' form.
    fn named_asset(&self, name: &str) -> impl Future<Output = Result<Asset>> + Send;

    /// Assets of a library, newest first, `limit` from `offset`.
    fn library_assets(
        &self,
        library_id: &LibraryId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<Asset>>> + Send;

    /// Assets of some libraries matching `query`, newest first.
    fn find_assets(&self, query: &AssetQuery<'_>) -> impl Future<Output = Result<Vec<Asset>>> + Send;

    /// Gives asset `id` the label `label`; the asset as it now is.
    fn rename_asset(&self, id: &AssetId, label: &str) -> impl Future<Output = Result<Asset>> + Send;

    /// Claims the asset for an upload and returns the attempt's id: only a `created` asset
    /// can be uploaded, by one PUT at a time. An upload whose heartbeat
    /// ([`AssetStore::touch_upload`]) stopped for
    /// [`STALE_UPLOAD_MS`](crate::store::STALE_UPLOAD_MS) (its api process died) can be taken
    /// over. `Conflict` otherwise.
    fn begin_upload(&self, id: &AssetId) -> impl Future<Output = Result<String>> + Send;

    /// Heartbeat of a streaming upload, so it is not taken for dead.
    fn touch_upload(&self, id: &AssetId, attempt: &str) -> impl Future<Output = Result<()>> + Send;

    /// Gives the asset back to the uploader after a failed PUT.
    fn abort_upload(&self, id: &AssetId, attempt: &str) -> impl Future<Output = Result<()>> + Send;

    /// Records the uploaded original and, in the same transaction, asks for its conversion.
    fn finish_upload(
        &self,
        id: &AssetId,
        attempt: &str,
        original_key: &str,
        content_type: &str,
        size: u64,
    ) -> impl Future<Output = Result<Asset>> + Send;

    /// Stores a finished conversion by its attempt `attempt` (that of its
    /// [`ConversionClaim`](crate::store::ConversionClaim); 0 for one never claimed), ending
    /// the unit in the same transaction; `false`, changing nothing, when that attempt no
    /// longer holds it (another worker took it over, or it ended).
    fn finish_conversion(
        &self,
        id: &AssetId,
        attempt: i64,
        c: &Conversion,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Marks the conversion failed with a readable error, as
    /// [`finish_conversion`](Self::finish_conversion) ends it.
    fn fail_conversion(&self, id: &AssetId, attempt: i64, error: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Removes the asset's record; returns it so the caller can remove its blobs.
    fn delete_asset(&self, id: &AssetId) -> impl Future<Output = Result<Asset>> + Send;
}
