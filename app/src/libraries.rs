//! Libraries as a user sees them (personal, their groups', public, stock), making one,
//! and the personal library every user has from first use.

use reelfarm_domain::id::{GroupId, LibraryId, UserId};
use reelfarm_domain::library::{Library, LibraryKind, LibraryOwner};

use crate::accounts::MAX_NAME_CHARS;
use crate::{text, AppError, Result};
use reelfarm_backends::store::{LibraryStore, UserStore};

/// Libraries of one kind, as the user sees them: each with whether the user may edit it.
pub struct Section {
    pub name: String,
    pub kind: LibraryKind,
    pub libraries: Vec<(Library, bool)>,
}

/// The user's libraries in sections: personal first, then each of their groups', then
/// public and stock when they have libraries. The personal and group libraries exist
/// from the first time anyone looks.
#[tracing::instrument(name = "libraries::list", skip_all, fields(user_id = %user))]
pub async fn list(store: &(impl LibraryStore + UserStore), user: &UserId) -> Result<Vec<Section>> {
    store.personal_library(user).await?;
    let groups = store.groups_of(user).await?;
    for group in &groups {
        store.group_library(&group.id, &group.name).await?;
    }
    let group_ids: Vec<GroupId> = groups.iter().map(|g| g.id.clone()).collect();
    let libraries = store.visible_libraries(user).await?;

    let section = |name: &str, kind| Section { name: name.into(), kind, libraries: Vec::new() };
    let mut out = vec![section("Personal", LibraryKind::Personal)];
    out.extend(groups.iter().map(|g| section(&g.name, LibraryKind::Group)));
    let mut public = section("Public", LibraryKind::Public);
    let mut stock = section("Stock", LibraryKind::Stock);
    for library in libraries {
        let index = match (&library.kind, &library.owner) {
            (LibraryKind::Personal, _) => Some(0),
            (LibraryKind::Group, LibraryOwner::Group(id)) => groups.iter().position(|g| &g.id == id).map(|i| i + 1),
            _ => None,
        };
        let editable = library.editable_by(user, &group_ids);
        let kind = library.kind;
        match index {
            Some(i) => out[i].libraries.push((library, editable)),
            None if kind == LibraryKind::Public => public.libraries.push((library, editable)),
            None => stock.libraries.push((library, editable)),
        }
    }
    out.extend([public, stock].into_iter().filter(|s| !s.libraries.is_empty()));
    Ok(out)
}

/// Makes a personal library of the user's named `name` (a text field of at most
/// [`MAX_NAME_CHARS`] characters).
#[tracing::instrument(name = "libraries::create", skip_all, fields(user_id = %user))]
pub async fn create(store: &impl LibraryStore, user: &UserId, name: Option<&str>) -> Result<Library> {
    let name = text::field("name", name, MAX_NAME_CHARS).map_err(|e| AppError::Invalid(vec![e]))?;
    Ok(store.create_library(&name, LibraryKind::Personal, LibraryOwner::User(user.clone())).await?)
}

/// The user's personal library, made on first use.
#[tracing::instrument(name = "libraries::personal", skip_all, fields(user_id = %user))]
pub async fn personal(store: &impl LibraryStore, user: &UserId) -> Result<Library> {
    Ok(store.personal_library(user).await?)
}

/// The ids of the groups `user` belongs to: what decides which libraries they see.
pub(crate) async fn group_ids(store: &impl UserStore, user: &UserId) -> Result<Vec<GroupId>> {
    Ok(store.groups_of(user).await?.into_iter().map(|g| g.id).collect())
}

/// The library `id` if the user may see it (else `NotFound`, so that ids of others'
/// libraries do not leak), with whether the user may edit it.
#[tracing::instrument(name = "libraries::visible", skip_all, fields(user_id = %user, id = %id))]
pub async fn visible(
    store: &(impl LibraryStore + UserStore),
    user: &UserId,
    id: &LibraryId,
) -> Result<(Library, bool)> {
    let library = store.library(id).await?;
    let groups = group_ids(store, user).await?;
    if !library.visible_to(user, &groups) {
        return Err(AppError::NotFound("library"));
    }
    let editable = library.editable_by(user, &groups);
    Ok((library, editable))
}
