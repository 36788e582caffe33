//! Ids in requests, parsed once where they come in: what the services take are typed ids
//! (`reelfarm_domain::id`), never free text.

use reelfarm_domain::id::EntityId;

use crate::error::ApiError;

/// The id of a path segment. Text that is not of our ids' form names nothing: the
/// resource is not found (404), as for an id that does not exist.
pub fn in_path<T: EntityId>(raw: &str) -> Result<T, ApiError> {
    T::parse(raw).ok_or_else(|| ApiError::not_found(T::WHAT))
}

/// The id of a request field `field`: not found, naming the field, when it is not of
/// our ids' form.
pub fn in_field<T: EntityId>(field: &str, raw: &str) -> Result<T, ApiError> {
    T::parse(raw).ok_or_else(|| ApiError::not_found_field(field, T::WHAT))
}
