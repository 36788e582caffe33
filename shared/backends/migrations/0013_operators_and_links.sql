-- The console's admin area and first sign-in (issue #19). Operators see every user and
-- group and set credits and memberships; the first run's owner is one.
ALTER TABLE users ADD COLUMN operator BIGINT NOT NULL DEFAULT 0;

-- One-time sign-in links, made by `reelfarm admin user link`, `user create --sign-in-link`
-- and the first run: a link signs its user in once, before it expires. Only a hash of
-- its token is kept.
CREATE TABLE sign_in_links (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE INDEX sign_in_links_user ON sign_in_links (user_id);
