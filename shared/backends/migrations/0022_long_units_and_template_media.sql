-- Every kind of work in the scheduler's order (docs/scheduling.md).

-- 1 for a render one worker renders whole (not split into chunks) whose estimate is above
-- a long unit's: each worker keeps one of its slots for shorter work.
ALTER TABLE renders ADD COLUMN long_unit BIGINT NOT NULL DEFAULT 0;

-- The thumb and preview a saved template waits for: claimed, leased and retried like a
-- render, in its owner's account's share. One row per template: a later save replaces
-- the version it asks for.
CREATE TABLE template_media (
    template_id  TEXT PRIMARY KEY REFERENCES templates (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL,
    account      TEXT NOT NULL,
    -- pending | started
    status       TEXT NOT NULL DEFAULT 'pending',
    attempts     BIGINT NOT NULL DEFAULT 0,
    worker       TEXT,
    lease_until  BIGINT,
    not_before   BIGINT NOT NULL DEFAULT 0,
    cost_ms      BIGINT NOT NULL,
    created_at   BIGINT NOT NULL
);
