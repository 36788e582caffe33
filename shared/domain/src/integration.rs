//! Linked accounts of the upload channels: which services a user can link an
//! account of, and the OAuth 2.0 client and refresh token such an account is.

use std::fmt;

/// A service a user can link an account of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    YouTube,
    Gdrive,
}

impl Provider {
    pub const ALL: [Provider; 2] = [Provider::YouTube, Provider::Gdrive];

    /// The name in paths, notifications and the database: `youtube` or `gdrive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::YouTube => "youtube",
            Provider::Gdrive => "gdrive",
        }
    }

    pub fn parse(s: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// OAuth 2.0 client and refresh token of a linked account. Debug redacts the secrets.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkedAccount {
    pub client_id: String,
    pub client_secret: String,
    pub refresh_token: String,
}

impl fmt::Debug for LinkedAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkedAccount")
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .field("refresh_token", &"[redacted]")
            .finish()
    }
}
