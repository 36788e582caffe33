//! Libraries: the caller's view of them (personal, their groups', public, stock), making
//! one, and the personal library every user has from first use.

use reelfarm_backends::store::{Library, LibraryKind, LibraryOwner};
use reelfarm_domain::id::{GroupId, LibraryId};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// Longest library name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Libraries of one kind, as the caller sees them: each with whether the caller may edit
/// it.
pub struct Section {
    pub name: String,
    pub kind: LibraryKind,
    pub libraries: Vec<(Library, bool)>,
}

/// The caller's libraries in sections: personal first, then each of their groups', then
/// public and stock when they have libraries. The personal and group libraries exist
/// from the first time anyone looks.
#[tracing::instrument(name = "libraries::list", skip_all, fields(user_id = %caller.user.id))]
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<Section>> {
    let store = &state.backends.store;
    store.personal_library(&caller.user.id).await?;
    let groups = caller.groups(state).await?;
    for group in &groups {
        store.group_library(&group.id, &group.name).await?;
    }
    let group_ids: Vec<GroupId> = groups.iter().map(|g| g.id.clone()).collect();
    let libraries = store.visible_libraries(&caller.user.id).await?;

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
        let editable = library.editable_by(&caller.user.id, &group_ids);
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

/// Makes a personal library of the caller's named `name` (a text field of at most
/// [`MAX_NAME_CHARS`] characters).
#[tracing::instrument(name = "libraries::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(state: &AppState, caller: &Caller, name: Option<&str>) -> Result<Library> {
    let name = parse_name(name)?;
    let owner = LibraryOwner::User(caller.user.id.clone());
    Ok(state.backends.store.create_library(&name, LibraryKind::Personal, owner).await?)
}

/// The caller's personal library, made on first use.
#[tracing::instrument(name = "libraries::personal", skip_all, fields(user_id = %caller.user.id))]
pub async fn personal(state: &AppState, caller: &Caller) -> Result<Library> {
    Ok(state.backends.store.personal_library(&caller.user.id).await?)
}

/// The library `id` if the caller may see it (else 404, so that ids of others' libraries
/// do not leak), with whether the caller may edit it.
#[tracing::instrument(name = "libraries::visible", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn visible(state: &AppState, caller: &Caller, id: &LibraryId) -> Result<(Library, bool)> {
    let library = state.backends.store.library(id).await?;
    let groups = caller.group_ids(state).await?;
    if !library.visible_to(&caller.user.id, &groups) {
        return Err(ApiError::not_found("Library"));
    }
    let editable = library.editable_by(&caller.user.id, &groups);
    Ok((library, editable))
}

/// A library name: a text field of at most [`MAX_NAME_CHARS`] characters.
pub fn parse_name(name: Option<&str>) -> Result<String> {
    crate::text::field("name", name, MAX_NAME_CHARS).map_err(|e| ApiError::validation(vec![e]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(parse_name(Some("  Holiday ")).unwrap(), "Holiday");
        let long = "a".repeat(101);
        for bad in [None, Some(""), Some("   "), Some(long.as_str()), Some("tab\there")] {
            let e = parse_name(bad).unwrap_err();
            assert_eq!(e.key(), "error.validation_failed");
            assert_eq!(e.body().errors[0].field, "name");
        }
        assert!(parse_name(Some(&"é".repeat(100))).is_ok(), "characters, not bytes, are counted");
    }
}
