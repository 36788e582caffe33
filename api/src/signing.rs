//! Signed upload addresses: `{public_url}/uploads/{id}?expires=UNIX&signature=HEX`, an
//! HMAC-SHA256 over the object id and the expiry, so one address uploads one object until
//! it expires, with no bearer token.

use hmac::{Hmac, Mac};
use secrecy::ExposeSecret;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use reelfarm_backends::Config;
use reelfarm_domain::id::AssetId;

fn mac(config: &Config, id: &AssetId, expires: i64) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(config.storage.secret_key.expose_secret().as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(b"upload\n");
    mac.update(id.as_str().as_bytes());
    mac.update(b"\n");
    mac.update(expires.to_string().as_bytes());
    mac
}

/// The signed upload address of object `id`, valid for the configured time from `now_ms`.
pub fn upload_url(config: &Config, id: &AssetId, now_ms: i64) -> String {
    let expires = now_ms / 1000 + config.api.upload_url_ttl.as_secs() as i64;
    let signature = hex::encode(mac(config, id, expires).finalize().into_bytes());
    format!("{}/uploads/{id}?expires={expires}&signature={signature}", config.api.public_url)
}

/// Why a signature was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    Expired,
    Invalid,
}

/// Checks the `expires` and `signature` of an upload address for object `id`.
pub fn verify(
    config: &Config,
    id: &AssetId,
    expires: Option<&str>,
    signature: Option<&str>,
    now_ms: i64,
) -> Result<(), Refusal> {
    let (Some(expires), Some(signature)) = (expires, signature) else { return Err(Refusal::Missing) };
    let expires: i64 = expires.parse().map_err(|_| Refusal::Invalid)?;
    let given = hex::decode(signature).map_err(|_| Refusal::Invalid)?;
    let expected = mac(config, id, expires).finalize().into_bytes();
    if !bool::from(expected.as_slice().ct_eq(&given)) {
        return Err(Refusal::Invalid);
    }
    if expires * 1000 <= now_ms {
        return Err(Refusal::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> AssetId {
        AssetId::trusted(name)
    }

    fn config() -> Config {
        let dir = std::env::temp_dir().join(format!("rf-sign-{}", reelfarm_domain::id::new_id()));
        Config::from_sources(
            None,
            [
                ("REELFARM_DATA_DIR".to_string(), dir.display().to_string()),
                ("REELFARM_SECRET_KEY".to_string(), "signing-test-secret-key-0123456789abcdef".to_string()),
            ],
        )
        .unwrap()
    }

    fn parts(url: &str) -> (String, String) {
        let query = url.split_once('?').unwrap().1;
        let mut expires = String::new();
        let mut signature = String::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap();
            if k == "expires" {
                expires = v.into()
            } else {
                signature = v.into()
            }
        }
        (expires, signature)
    }

    #[test]
    fn a_signed_url_verifies_for_its_object_until_it_expires() {
        let c = config();
        let url = upload_url(&c, &obj("obj-1"), 1_000_000);
        assert!(url.starts_with("http://127.0.0.1:8080/uploads/obj-1?expires="));
        let (expires, sig) = parts(&url);
        assert_eq!(verify(&c, &obj("obj-1"), Some(&expires), Some(&sig), 1_000_000), Ok(()));
        assert_eq!(verify(&c, &obj("obj-2"), Some(&expires), Some(&sig), 1_000_000), Err(Refusal::Invalid));
        let later = (expires.parse::<i64>().unwrap() + 1) * 1000;
        assert_eq!(verify(&c, &obj("obj-1"), Some(&expires), Some(&sig), later), Err(Refusal::Expired));
    }

    #[test]
    fn tampering_is_refused() {
        let c = config();
        let (expires, sig) = parts(&upload_url(&c, &obj("obj"), 0));
        let longer = (expires.parse::<i64>().unwrap() + 3600).to_string();
        assert_eq!(verify(&c, &obj("obj"), Some(&longer), Some(&sig), 0), Err(Refusal::Invalid));
        let mut flipped = sig.clone();
        flipped.replace_range(0..1, if sig.starts_with('0') { "1" } else { "0" });
        assert_eq!(verify(&c, &obj("obj"), Some(&expires), Some(&flipped), 0), Err(Refusal::Invalid));
        assert_eq!(verify(&c, &obj("obj"), Some(&expires), Some("zz"), 0), Err(Refusal::Invalid));
        assert_eq!(verify(&c, &obj("obj"), None, Some(&sig), 0), Err(Refusal::Missing));
    }
}
