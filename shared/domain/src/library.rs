//! Libraries: where assets live, whose they are, and who may see and change them.

use crate::id::{GroupId, LibraryId, UserId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryKind {
    Personal,
    Group,
    Public,
    Stock,
}

impl LibraryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LibraryKind::Personal => "personal",
            LibraryKind::Group => "group",
            LibraryKind::Public => "public",
            LibraryKind::Stock => "stock",
        }
    }

    pub fn parse(s: &str) -> Option<LibraryKind> {
        [LibraryKind::Personal, LibraryKind::Group, LibraryKind::Public, LibraryKind::Stock]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// Who a library belongs to; follows from its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryOwner {
    User(UserId),
    Group(GroupId),
    /// Public and stock libraries belong to the operator.
    Operator,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    pub id: LibraryId,
    pub name: String,
    pub kind: LibraryKind,
    pub owner: LibraryOwner,
    /// The library created on first use for a user or group.
    pub is_default: bool,
    pub sort_order: i64,
    pub created_at: i64,
}

impl Library {
    /// Whether a user who belongs to `group_ids` may see the library and its assets.
    pub fn visible_to(&self, user_id: &UserId, group_ids: &[GroupId]) -> bool {
        match &self.owner {
            LibraryOwner::User(owner) => owner == user_id,
            LibraryOwner::Group(group) => group_ids.contains(group),
            LibraryOwner::Operator => true,
        }
    }

    /// Whether that user may add and remove assets. Public and stock libraries are
    /// curated by the operator (through `reelfarm admin`) and read-only over the API.
    pub fn editable_by(&self, user_id: &UserId, group_ids: &[GroupId]) -> bool {
        match &self.owner {
            LibraryOwner::Operator => false,
            _ => self.visible_to(user_id, group_ids),
        }
    }
}
