-- Abuse of failed renders (issue #16).
-- When an e-mail delivery took its place in its user's hourly e-mail allowance (set once,
-- by its first attempt under the limit); `REELFARM_EMAIL_RATE_LIMIT` counts these.
ALTER TABLE deliveries ADD COLUMN counted_at BIGINT;
CREATE INDEX deliveries_counted ON deliveries (user_id, kind, counted_at);

-- Characters each user sent to paid text-to-speech providers (a cache hit sends none).
CREATE TABLE tts_usage (
    user_id     TEXT NOT NULL,
    -- polly | google
    provider    TEXT NOT NULL,
    characters  BIGINT NOT NULL DEFAULT 0,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, provider)
);
