-- What each render costs (docs/templates.md, "What a render costs"): the estimated
-- CPU-milliseconds the scheduler's shares count, and the seconds of video it makes, which
-- the accounts' draft budgets count. `charged` holds the credits a render took (it was 0
-- or 1 while every render cost one credit), refunded as they were taken.
ALTER TABLE renders ADD COLUMN cost_ms BIGINT NOT NULL DEFAULT 1000;
ALTER TABLE renders ADD COLUMN video_ms BIGINT NOT NULL DEFAULT 0;
