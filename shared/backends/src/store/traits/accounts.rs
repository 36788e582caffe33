//! Users, groups and the accounts the console manages.

use std::future::Future;
use std::time::Duration;

use reelfarm_domain::id::{GroupId, UserId};

use crate::store::{Account, Credits, Group, GroupSummary, NewUser, Result, TokenRecord, User};

/// Users and groups, their tokens, credits and webhook secrets. (`users.rs`)
pub trait UserStore {
    /// Creates a user, and the named group if it does not exist yet, making the user a
    /// member of it.
    fn create_user(&self, name: &str, group: Option<&str>, credits: i64) -> impl Future<Output = Result<User>> + Send;

    /// Creates a user as [`NewUser`] describes, in one transaction: the user, its group and
    /// membership, operator flag and sign-in address (without a password: the user sets
    /// one after a one-time link). `Conflict` when the name or the address is taken.
    fn create_account(&self, new: &NewUser<'_>) -> impl Future<Output = Result<User>> + Send;

    fn user(&self, id: &UserId) -> impl Future<Output = Result<User>> + Send;

    /// Sets the e-mail address (normalised by the caller) and the password hash `user_id`
    /// signs in to the console with. `Conflict` when another user has the address.
    fn set_sign_in(
        &self,
        user_id: &UserId,
        email: &str,
        password_hash: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The user who signs in as `email`, with their password hash.
    fn sign_in_of(&self, email: &str) -> impl Future<Output = Result<Option<(User, String)>>> + Send;

    /// The user named `name_or_id`, or with that id.
    fn find_user(&self, name_or_id: &str) -> impl Future<Output = Result<User>> + Send;

    /// The group named `name_or_id`, or with that id.
    fn find_group(&self, name_or_id: &str) -> impl Future<Output = Result<Group>> + Send;

    /// The groups `user_id` belongs to, in the order joined.
    fn groups_of(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<Group>>> + Send;

    /// Makes a token for `user_id` valid for `days`; returns the record and the plaintext,
    /// which is not kept.
    fn create_token(&self, user_id: &UserId, days: u32) -> impl Future<Output = Result<(TokenRecord, String)>> + Send;

    /// [`UserStore::create_token`] with a name its owner gave it.
    fn create_named_token(
        &self,
        user_id: &UserId,
        name: &str,
        days: u32,
    ) -> impl Future<Output = Result<(TokenRecord, String)>> + Send;

    /// The user a presented token belongs to, when the token is known, unrevoked and
    /// unexpired. Candidates are found by prefix; the hash is compared in constant time.
    fn authenticate(&self, presented: &str) -> impl Future<Output = Result<Option<(User, TokenRecord)>>> + Send;

    /// The tokens of `user_id`, newest first, revoked and expired ones too.
    fn tokens_of(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<TokenRecord>>> + Send;

    /// Revokes token `id` of `user_id` (`NotFound` for anyone else's); revoking twice
    /// keeps the first time.
    fn revoke_token_of(&self, user_id: &UserId, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Revokes the token with this id, or the one token whose prefix starts with
    /// `id_or_prefix` (at least the `rf_` marker and 4 characters).
    fn revoke_token(&self, id_or_prefix: &str) -> impl Future<Output = Result<TokenRecord>> + Send;

    /// Sets the credits of the user or group named (or with the id) `who`; a user wins
    /// over a group of the same name.
    fn set_credits(&self, who: &str, credits: i64) -> impl Future<Output = Result<Credits>> + Send;

    /// The user's webhook signing secret as stored: sealed (see
    /// `integration::webhook_secret`), empty before the first use, or in clear when an
    /// earlier version stored it.
    fn stored_webhook_secret(&self, user_id: &UserId) -> impl Future<Output = Result<String>> + Send;

    /// Stores `new` as the user's webhook secret if the stored one is still `expected`
    /// (`None`: whatever it is); whether it was stored.
    fn replace_webhook_secret(
        &self,
        user_id: &UserId,
        expected: Option<&str>,
        new: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// Accounts as the console manages them: operators, sign-in links and addresses,
/// memberships. (`accounts.rs`)
pub trait AccountStore {
    /// Makes `user_id` an operator, or no longer one.
    fn set_operator(&self, user_id: &UserId, operator: bool) -> impl Future<Output = Result<()>> + Send;

    /// A one-time sign-in link's token for `user_id`, valid for `ttl`; only its hash is
    /// kept.
    fn create_sign_in_link(&self, user_id: &UserId, ttl: Duration) -> impl Future<Output = Result<String>> + Send;

    /// Uses the sign-in link of `token`: its user, once, while it is valid; `None` for a
    /// link unknown, used or expired. Two uses at the same moment: one wins.
    fn use_sign_in_link(&self, token: &str) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The e-mail address `user_id` signs in with, if one is set.
    fn email_of(&self, user_id: &UserId) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Every user by name, `limit` from `offset`, with their e-mail address and groups
    /// (two queries, whatever the number of users).
    fn accounts(&self, limit: u32, offset: u64) -> impl Future<Output = Result<Vec<Account>>> + Send;

    /// Every group by name with its number of members.
    fn group_summaries(&self) -> impl Future<Output = Result<Vec<GroupSummary>>> + Send;

    /// Makes `user_id` a member of the group named `group` (created, without credits, if
    /// missing); the group. Already a member: nothing changes.
    fn join_group(&self, user_id: &UserId, group: &str) -> impl Future<Output = Result<Group>> + Send;

    /// Ends the membership of `user_id` in `group_id`; `false` when there was none.
    fn leave_group(&self, user_id: &UserId, group_id: &GroupId) -> impl Future<Output = Result<bool>> + Send;
}
