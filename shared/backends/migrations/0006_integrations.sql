-- Accounts of video sites and cloud drives linked by users (issue #6): the OAuth client
-- id in clear (shown back), the client secret and refresh token sealed (AEAD, see
-- `shared/src/integration.rs`; never shown back).
CREATE TABLE integrations (
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- youtube | gdrive
    provider    TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    -- base64url(version || nonce || XChaCha20-Poly1305 ciphertext of the account's JSON)
    sealed      TEXT NOT NULL,
    -- first linked; kept when the account is linked again
    linked_at   BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, provider)
);
