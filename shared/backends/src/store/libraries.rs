//! Libraries: personal (per user), group (per group), public and stock (read-only for all).

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{flag, id, is_unique_violation, missing_reference, Result, Store, StoreError};
use crate::store::LibraryStore;
use reelfarm_domain::id::{now_ms, GroupId, LibraryId, UserId};
use reelfarm_domain::library::{Library, LibraryKind, LibraryOwner};

const COLUMNS: &str = "id, name, kind, owner_user_id, owner_group_id, is_default, sort_order, created_at";

fn library_from(row: &AnyRow) -> Result<Library> {
    let kind: String = row.try_get("kind")?;
    let kind = LibraryKind::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("library kind `{kind}`")))?;
    let user: Option<String> = row.try_get("owner_user_id")?;
    let group: Option<String> = row.try_get("owner_group_id")?;
    let owner = match (user, group) {
        (Some(u), _) => LibraryOwner::User(UserId::trusted(u)),
        (None, Some(g)) => LibraryOwner::Group(GroupId::trusted(g)),
        (None, None) => LibraryOwner::Operator,
    };
    Ok(Library {
        id: id(row, "id")?,
        name: row.try_get("name")?,
        kind,
        owner,
        is_default: flag(row, "is_default")?,
        sort_order: row.try_get("sort_order")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    async fn insert_library(
        &self,
        name: &str,
        kind: LibraryKind,
        owner: LibraryOwner,
        is_default: bool,
    ) -> Result<Library> {
        let (user, group) = match &owner {
            LibraryOwner::User(u) => (Some(u.to_string()), None),
            LibraryOwner::Group(g) => (None, Some(g.to_string())),
            LibraryOwner::Operator => (None, None),
        };
        let library = Library {
            id: LibraryId::generate(),
            name: name.to_string(),
            kind,
            owner,
            is_default,
            sort_order: 0,
            created_at: now_ms(),
        };
        sqlx::query(&format!("INSERT INTO libraries ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"))
            .bind(library.id.as_str())
            .bind(&library.name)
            .bind(kind.as_str())
            .bind(user)
            .bind(group)
            .bind(i64::from(is_default))
            .bind(library.sort_order)
            .bind(library.created_at)
            .execute(&self.pool)
            .await
            .map_err(missing_reference("library owner"))?;
        Ok(library)
    }

    async fn default_library(&self, kind: LibraryKind, owner: LibraryOwner, name: &str) -> Result<Library> {
        let (column, owner_id) = match &owner {
            LibraryOwner::User(u) => ("owner_user_id", u.to_string()),
            LibraryOwner::Group(g) => ("owner_group_id", g.to_string()),
            LibraryOwner::Operator => unreachable!("only users and groups have default libraries"),
        };
        let find = format!("SELECT {COLUMNS} FROM libraries WHERE {column} = $1 AND is_default = 1");
        if let Some(row) = sqlx::query(&find).bind(&owner_id).fetch_optional(&self.pool).await? {
            return library_from(&row);
        }
        match self.insert_library(name, kind, owner, true).await {
            Ok(library) => Ok(library),
            // Another request created it between our read and insert: use theirs.
            Err(StoreError::Database(e)) if is_unique_violation(&e) => {
                let row = sqlx::query(&find).bind(&owner_id).fetch_one(&self.pool).await?;
                library_from(&row)
            }
            Err(e) => Err(e),
        }
    }
}

impl LibraryStore for Store {
    #[tracing::instrument(name = "store::create_library", level = "debug", skip_all)]
    async fn create_library(&self, name: &str, kind: LibraryKind, owner: LibraryOwner) -> Result<Library> {
        let consistent = matches!(
            (&kind, &owner),
            (LibraryKind::Personal, LibraryOwner::User(_))
                | (LibraryKind::Group, LibraryOwner::Group(_))
                | (LibraryKind::Public | LibraryKind::Stock, LibraryOwner::Operator)
        );
        if !consistent {
            return Err(StoreError::Conflict(format!("a {} library cannot belong to {owner:?}", kind.as_str())));
        }
        self.insert_library(name, kind, owner, false).await
    }

    #[tracing::instrument(name = "store::library", level = "debug", skip_all)]
    async fn library(&self, id: &LibraryId) -> Result<Library> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM libraries WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("library"))?;
        library_from(&row)
    }

    #[tracing::instrument(name = "store::personal_library", level = "debug", skip_all)]
    async fn personal_library(&self, user_id: &UserId) -> Result<Library> {
        self.default_library(LibraryKind::Personal, LibraryOwner::User(user_id.clone()), "My library").await
    }

    #[tracing::instrument(name = "store::group_library", level = "debug", skip_all)]
    async fn group_library(&self, group_id: &GroupId, group_name: &str) -> Result<Library> {
        self.default_library(LibraryKind::Group, LibraryOwner::Group(group_id.clone()), group_name).await
    }

    #[tracing::instrument(name = "store::visible_libraries", level = "debug", skip_all)]
    async fn visible_libraries(&self, user_id: &UserId) -> Result<Vec<Library>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM libraries \
             WHERE owner_user_id = $1 \
                OR owner_group_id IN (SELECT group_id FROM group_members WHERE user_id = $1) \
                OR kind IN ('public', 'stock') \
             ORDER BY sort_order, created_at, id"
        ))
        .bind(user_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(library_from).collect()
    }
}
