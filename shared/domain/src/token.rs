//! Personal access tokens: `rf_` + 32 random bytes in base62. Only a SHA-256 hash is
//! stored; the first characters (the prefix) index the row, and the hash is compared in
//! constant time so a lookup leaks nothing about how much of a guess was right.

use hmac::{Hmac, Mac};
use rand::{rngs::OsRng, Rng, RngCore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Marker of our tokens, so secret scanners and humans recognise them.
pub const TOKEN_MARKER: &str = "rf_";
/// Characters after the marker that form the lookup prefix.
const PREFIX_CHARS: usize = 8;
/// How long a token is valid unless told otherwise (spec §5: one year).
pub const DEFAULT_VALIDITY_DAYS: u32 = 365;

/// A freshly made token; `plaintext` is shown once and never stored.
pub struct NewToken {
    pub plaintext: String,
    pub prefix: String,
    pub hash: String,
}

/// `n` base62 characters from the operating system's random source.
pub fn random_base62(n: usize) -> String {
    let mut rng = OsRng;
    (0..n).map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char).collect()
}

/// A name only the holder of `secret` can compute from `parts`: HMAC-SHA-256 of the parts
/// (each prefixed with its length, so that no two lists of parts collide), in hex.
/// Stable for the same parts, so work done twice lands on the same name.
pub fn keyed_name(secret: &[u8], parts: &[&str]) -> String {
    let mut hash = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    for part in parts {
        hash.update(&(part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hex::encode(hash.finalize().into_bytes())
}

/// 32 random bytes written in base62 (43 characters, the bytes as one big number).
fn base62_of_32_random_bytes() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    // Repeated division of the big-endian number by 62.
    let mut digits = Vec::with_capacity(43);
    let mut num = bytes.to_vec();
    while num.iter().any(|&b| b != 0) {
        let mut rem = 0u32;
        for b in num.iter_mut() {
            let acc = (rem << 8) | *b as u32;
            *b = (acc / 62) as u8;
            rem = acc % 62;
        }
        digits.push(BASE62[rem as usize]);
    }
    while digits.len() < 43 {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).expect("base62 is ASCII")
}

/// Makes a new token.
pub fn generate() -> NewToken {
    let plaintext = format!("{TOKEN_MARKER}{}", base62_of_32_random_bytes());
    let prefix = prefix_of(&plaintext).expect("a generated token has a prefix").to_string();
    let hash = hash(&plaintext);
    NewToken { plaintext, prefix, hash }
}

/// The lookup prefix of a presented token, or `None` when it cannot be one of ours.
pub fn prefix_of(token: &str) -> Option<&str> {
    let body = token.strip_prefix(TOKEN_MARKER)?;
    if body.len() != 43 || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some(&token[..TOKEN_MARKER.len() + PREFIX_CHARS])
}

/// Hex SHA-256 of the token. Tokens carry 256 bits of entropy, so a fast hash is right.
pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` hashes to `stored_hash`, compared in constant time.
pub fn verify(token: &str, stored_hash: &str) -> bool {
    hash(token).as_bytes().ct_eq(stored_hash.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_have_the_documented_shape() {
        let t = generate();
        assert!(t.plaintext.starts_with("rf_"));
        assert_eq!(t.plaintext.len(), 3 + 43);
        assert!(t.plaintext[3..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(t.prefix, &t.plaintext[..11]);
        assert_eq!(t.hash.len(), 64);
        assert_ne!(t.hash, t.plaintext);
        assert_ne!(generate().plaintext, t.plaintext);
    }

    #[test]
    fn verify_accepts_only_the_exact_token() {
        let t = generate();
        assert!(verify(&t.plaintext, &t.hash));
        let mut wrong = t.plaintext.clone();
        let last = wrong.pop().unwrap();
        wrong.push(if last == 'a' { 'b' } else { 'a' });
        assert!(!verify(&wrong, &t.hash));
        assert!(!verify("", &t.hash));
    }

    #[test]
    fn prefix_rejects_foreign_strings() {
        assert!(prefix_of("Bearer xyz").is_none());
        assert!(prefix_of("rf_short").is_none());
        assert!(prefix_of(&format!("rf_{}", "!".repeat(43))).is_none());
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
