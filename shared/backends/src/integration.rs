//! Linked accounts of the upload channels: the OAuth 2.0 client and refresh
//! token with which the notifier uploads a user's videos to YouTube or Google Drive.
//!
//! The account is linked in a dashboard outside this API and handed to
//! `PUT /api2/v1/users/me/integrations/{provider}`. Its secrets are kept encrypted at rest
//! ([`Sealer`]: XChaCha20-Poly1305 under a key derived from `REELFARM_SECRET_KEY` through
//! HKDF-SHA256), bound to the user and provider they belong to, and never shown again.

use std::fmt;

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use rand::RngCore;
use secrecy::ExposeSecret;
use sha2::Sha256;

use reelfarm_domain::id::UserId;
use reelfarm_domain::integration::{LinkedAccount, Provider};

use crate::store::{IntegrationRecord, IntegrationStore, Store};
use crate::Config;

/// Why a sealed value does not open.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// Not base64, too short, or not the JSON it should hold.
    #[error("the sealed value is malformed")]
    Malformed,
    /// Sealed by a format this build does not know.
    #[error("the sealed value has unknown format version {0}")]
    UnknownVersion(u8),
    /// Sealed under another key (`REELFARM_SECRET_KEY` changed), for another owner
    /// (other associated data), or altered.
    #[error("the sealed value does not decrypt with the current secret key (was REELFARM_SECRET_KEY changed?) or was altered")]
    Undecryptable,
}

/// Format version of sealed values: the first byte, also authenticated.
const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
/// HKDF salt and info: domain separation from the other uses of the secret key (upload
/// signatures), and room for a second key should the format change.
const HKDF_SALT: &[u8] = b"reelfarm";
const HKDF_INFO: &[u8] = b"reelfarm integration secrets v1 (XChaCha20-Poly1305)";

/// AEAD over the integrations' secrets, keyed from `Config::secret_key` through
/// HKDF-SHA256. A sealed value is base64url (no padding) of
/// `version (1 byte) || nonce (24 random bytes) || ciphertext and tag`.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer { .. }")
    }
}

impl Sealer {
    pub fn new(config: &Config) -> Sealer {
        Sealer::from_secret(config.storage.secret_key.expose_secret().as_bytes())
    }

    pub(crate) fn from_secret(secret: &[u8]) -> Sealer {
        let mut key = [0u8; 32];
        Hkdf::<Sha256>::new(Some(HKDF_SALT), secret)
            .expand(HKDF_INFO, &mut key)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Sealer { cipher: XChaCha20Poly1305::new(Key::from_slice(&key)) }
    }

    /// Encrypts `plaintext` bound to `aad` (which must be given again to open it).
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: &with_version(VERSION, aad) })
            .expect("XChaCha20-Poly1305 encrypts any in-memory message");
        let mut out = Vec::with_capacity(1 + NONCE_LEN + ciphertext.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
    }

    /// Decrypts a value of [`Sealer::seal`] made with the same key and `aad`.
    pub fn open(&self, sealed: &str, aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let bytes =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sealed).map_err(|_| SealError::Malformed)?;
        let (&version, rest) = bytes.split_first().ok_or(SealError::Malformed)?;
        if version != VERSION {
            return Err(SealError::UnknownVersion(version));
        }
        if rest.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::Malformed);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        self.cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad: &with_version(version, aad) })
            .map_err(|_| SealError::Undecryptable)
    }
}

fn with_version(version: u8, aad: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + aad.len());
    out.push(version);
    out.extend_from_slice(aad);
    out
}

/// The associated data that binds a sealed account to its user and provider, so a row
/// copied to another user or provider does not decrypt.
fn account_aad(user_id: &UserId, provider: Provider) -> Vec<u8> {
    format!("reelfarm integration\0{}\0{user_id}", provider.as_str()).into_bytes()
}

/// A linked account that no longer decrypts (the secret key changed, or the row was
/// altered or copied): the user must link it again.
#[derive(Debug, thiserror::Error)]
#[error(
    "the linked {provider} account cannot be decrypted (was REELFARM_SECRET_KEY changed?); \
     re-link the account with PUT /api2/v1/users/me/integrations/{provider}"
)]
pub struct RelinkNeeded {
    pub provider: Provider,
    #[source]
    pub source: SealError,
}

/// Links (or re-links, replacing the previous one) `account` as the user's `provider`
/// account, its secrets sealed; returns the stored record.
pub async fn link_account(
    store: &Store,
    sealer: &Sealer,
    user_id: &UserId,
    provider: Provider,
    account: &LinkedAccount,
) -> crate::store::Result<IntegrationRecord> {
    let plaintext = serde_json::to_vec(account).expect("a linked account serializes");
    let sealed = sealer.seal(&plaintext, &account_aad(user_id, provider));
    store.link_integration(user_id, provider, &account.client_id, &sealed).await?;
    store.integration(user_id, provider).await?.ok_or(crate::store::StoreError::NotFound("integration"))
}

/// The user's linked account for `provider`, decrypted; `Ok(None)` when not linked.
///
/// Errors: a [`crate::store::StoreError`] (see `is_transient`) when the store fails, a
/// [`RelinkNeeded`] when the stored account no longer decrypts; both can be found with
/// `anyhow::Error::downcast_ref`.
pub async fn linked_account(
    store: &Store,
    sealer: &Sealer,
    user_id: &UserId,
    provider: Provider,
) -> anyhow::Result<Option<LinkedAccount>> {
    let Some(record) = store.integration(user_id, provider).await? else { return Ok(None) };
    let relink = |source| RelinkNeeded { provider, source };
    let plaintext = sealer.open(&record.sealed, &account_aad(user_id, provider)).map_err(relink)?;
    let account: LinkedAccount = serde_json::from_slice(&plaintext).map_err(|_| relink(SealError::Malformed))?;
    Ok(Some(account))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::from_secret(b"a test secret key of at least thirty-two characters")
    }

    #[test]
    fn sealed_values_open_back() {
        let sealer = sealer();
        let sealed = sealer.seal(b"refresh-token-123", b"user 1");
        assert!(sealed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{sealed}");
        assert!(!sealed.contains("refresh"));
        assert_eq!(sealer.open(&sealed, b"user 1").unwrap(), b"refresh-token-123");
        assert_eq!(sealer.open(&sealer.seal(b"", b""), b"").unwrap(), b"");
    }

    #[test]
    fn the_same_plaintext_seals_differently_each_time() {
        let sealer = sealer();
        assert_ne!(sealer.seal(b"same", b"aad"), sealer.seal(b"same", b"aad"));
    }

    #[test]
    fn other_aad_tampering_or_another_key_do_not_open() {
        let sealer = sealer();
        let sealed = sealer.seal(b"secret", b"user 1");
        assert!(matches!(sealer.open(&sealed, b"user 2"), Err(SealError::Undecryptable)));

        let other = Sealer::from_secret(b"another test secret key, also thirty-two or more");
        assert!(matches!(other.open(&sealed, b"user 1"), Err(SealError::Undecryptable)));

        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let bytes = engine.decode(&sealed).unwrap();
        for i in [1, 1 + NONCE_LEN, bytes.len() - 1] {
            let mut tampered = bytes.clone();
            tampered[i] ^= 0x01;
            assert!(
                matches!(sealer.open(&engine.encode(&tampered), b"user 1"), Err(SealError::Undecryptable)),
                "byte {i}"
            );
        }
        let mut versioned = bytes.clone();
        versioned[0] = 2;
        assert!(matches!(sealer.open(&engine.encode(&versioned), b"user 1"), Err(SealError::UnknownVersion(2))));
        assert!(matches!(sealer.open(&engine.encode(&bytes[..30]), b"user 1"), Err(SealError::Malformed)));
        assert!(matches!(sealer.open("not base64!", b"user 1"), Err(SealError::Malformed)));
        assert!(matches!(sealer.open("", b"user 1"), Err(SealError::Malformed)));
    }

    #[test]
    fn account_aad_binds_user_and_provider() {
        let (u1, u2) = (UserId::generate(), UserId::generate());
        assert_ne!(account_aad(&u1, Provider::YouTube), account_aad(&u1, Provider::Gdrive));
        assert_ne!(account_aad(&u1, Provider::YouTube), account_aad(&u2, Provider::YouTube));
    }

    #[test]
    fn providers_parse_their_names_only() {
        for p in Provider::ALL {
            assert_eq!(Provider::parse(p.as_str()), Some(p));
        }
        assert_eq!(Provider::parse("youtube"), Some(Provider::YouTube));
        assert_eq!(Provider::parse("gdrive"), Some(Provider::Gdrive));
        assert_eq!(Provider::parse("YouTube"), None);
        assert_eq!(Provider::parse("dropbox"), None);
    }

    #[test]
    fn debug_redacts_the_secrets() {
        let account = LinkedAccount {
            client_id: "client-1".into(),
            client_secret: "shh-secret".into(),
            refresh_token: "1//refresh".into(),
        };
        let shown = format!("{account:?}");
        assert!(shown.contains("client-1"));
        assert!(!shown.contains("shh-secret") && !shown.contains("1//refresh"), "{shown}");
        assert_eq!(format!("{:?}", sealer()), "Sealer { .. }");
    }
}
