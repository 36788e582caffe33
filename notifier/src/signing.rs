//! Signatures of outgoing webhooks per the Standard Webhooks specification: the body is
//! signed together with its message id and timestamp (`{id}.{timestamp}.{body}`) by
//! HMAC-SHA256 under the user's secret (`whsec_` + base64 of the key), and sent as
//! `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64>`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The marker of a Standard Webhooks secret.
const SECRET_PREFIX: &str = "whsec_";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningError {
    #[error("the webhook secret is not `whsec_` followed by base64")]
    InvalidSecret,
}

/// The `webhook-signature` value of `body` sent as message `id` at `timestamp` (Unix
/// seconds).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, SigningError> {
    let key = STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret))
        .map_err(|_| SigningError::InvalidSecret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| SigningError::InvalidSecret)?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

/// The three headers of a signed webhook.
pub fn headers(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<[(String, String); 3], SigningError> {
    Ok([
        ("webhook-id".to_string(), id.to_string()),
        ("webhook-timestamp".to_string(), timestamp.to_string()),
        ("webhook-signature".to_string(), sign(secret, id, timestamp, body)?),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_webhooks_known_answer_vector_is_reproduced() {
        let signature = sign(
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            br#"{"email":"test@example.com","username":"test_user"}"#,
        )
        .unwrap();
        assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
    }

    #[test]
    fn any_change_of_id_time_or_body_changes_the_signature() {
        let secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
        let base = sign(secret, "msg_1", 1, b"{}").unwrap();
        assert_ne!(sign(secret, "msg_2", 1, b"{}").unwrap(), base);
        assert_ne!(sign(secret, "msg_1", 2, b"{}").unwrap(), base);
        assert_ne!(sign(secret, "msg_1", 1, b"{ }").unwrap(), base);
        let headers = headers(secret, "msg_1", 1, b"{}").unwrap();
        assert_eq!(headers[2], ("webhook-signature".to_string(), base));
    }

    #[test]
    fn a_malformed_secret_is_refused() {
        assert_eq!(sign("whsec_not base64!", "m", 1, b""), Err(SigningError::InvalidSecret));
    }
}
