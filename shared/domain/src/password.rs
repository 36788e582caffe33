//! Console passwords: hashed with Argon2id at OWASP's parameters (19 MiB,
//! two passes), in the PHC string form that carries its own salt and parameters.

use std::sync::OnceLock;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// Shortest password accepted.
pub const MIN_LENGTH: usize = 10;
/// Longest password accepted (hashing is bounded by it).
pub const MAX_LENGTH: usize = 256;

/// Why a password is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    #[error("the password must be at least {MIN_LENGTH} characters long")]
    TooShort,
    #[error("the password must be at most {MAX_LENGTH} characters long")]
    TooLong,
}

/// The stored form of `password`: a new salt, Argon2id.
pub fn hash(password: &str) -> Result<String, PasswordError> {
    match password.chars().count() {
        n if n < MIN_LENGTH => return Err(PasswordError::TooShort),
        n if n > MAX_LENGTH => return Err(PasswordError::TooLong),
        _ => {}
    }
    let salt = SaltString::generate(&mut OsRng);
    Ok(Argon2::default().hash_password(password.as_bytes(), &salt).expect("Argon2 hashes any password").to_string())
}

/// Whether `password` is the one `stored` was made from (false for anything unreadable).
pub fn verify(password: &str, stored: &str) -> bool {
    password.len() <= MAX_LENGTH * 4
        && PasswordHash::new(stored)
            .is_ok_and(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
}

/// An e-mail address as sign-in compares it (trimmed, lower case), when it looks like
/// one: one `@` with text on both sides, no spaces or control characters, at most 254
/// characters.
pub fn normalize_email(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let plain = email.chars().all(|c| !c.is_whitespace() && !c.is_control());
    (plain && !local.is_empty() && !domain.is_empty() && !domain.contains('@') && email.len() <= 254).then_some(email)
}

/// A hash of a random password nobody knows: checking against it costs what checking a
/// real one does.
pub fn unusable_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| hash(&crate::token::random_base62(32)).expect("a random password is long enough"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let stored = hash("correct horse battery").unwrap();
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        assert!(verify("correct horse battery", &stored));
        assert!(!verify("correct horse batterz", &stored));
        assert!(!verify("correct horse battery", "not a hash"));
        assert_ne!(hash("correct horse battery").unwrap(), stored, "salted");
        assert!(!verify("anything at all", unusable_hash()));
    }

    #[test]
    fn addresses_compare_trimmed_in_lower_case() {
        assert_eq!(normalize_email(" Ann@Example.COM ").as_deref(), Some("ann@example.com"));
        for bad in ["", "ann", "@example.com", "ann@", "a b@example.com", "a@b@c", "a@b\u{0}"] {
            assert_eq!(normalize_email(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lengths_are_bounded() {
        assert_eq!(hash("short"), Err(PasswordError::TooShort));
        assert_eq!(hash(&"x".repeat(257)), Err(PasswordError::TooLong));
        assert!(hash(&"é".repeat(10)).is_ok(), "counted in characters");
    }
}
