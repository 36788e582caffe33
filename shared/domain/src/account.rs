//! Accounts: users, the groups that share credits, and whose credits were set.

use crate::id::{GroupId, UserId};

/// A user: who makes templates and jobs, and whose credits (or group's) they take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    /// A stable number, in creation order, for clients that type a user's id as an integer.
    pub number: i64,
    pub name: String,
    pub credits: i64,
    pub created_at: i64,
    /// Sees and manages every user and group in the console's admin area.
    pub operator: bool,
}

/// A group of users sharing one credit balance (and, through it, one share of the farm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: GroupId,
    pub name: String,
    pub credits: i64,
    pub created_at: i64,
}

/// Whose credits were set, and to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credits {
    User { id: UserId, name: String, credits: i64 },
    Group { id: GroupId, name: String, credits: i64 },
}
