-- Conversions in the scheduler, and shares that count what work really used
-- (docs/scheduling.md).

-- An uploaded original waiting for its renditions: a unit of work in its owner's
-- account's share, claimed by a `convert.v1` token, leased and retried like a render.
CREATE TABLE conversions (
    asset_id     TEXT PRIMARY KEY REFERENCES assets (id) ON DELETE CASCADE,
    account      TEXT NOT NULL,
    -- pending | started
    status       TEXT NOT NULL DEFAULT 'pending',
    attempts     BIGINT NOT NULL DEFAULT 0,
    worker       TEXT,
    lease_until  BIGINT,
    not_before   BIGINT NOT NULL DEFAULT 0,
    claimed_at   BIGINT,
    cost_ms      BIGINT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- Uploads stored before this version whose conversion is still to come.
INSERT INTO conversions (asset_id, account, cost_ms, created_at)
SELECT a.id,
       COALESCE((SELECT 'group:' || m.group_id FROM group_members m WHERE m.user_id = a.owner_user_id
                 ORDER BY m.joined_at, m.group_id LIMIT 1), 'user:' || a.owner_user_id),
       1000 + COALESCE(a.size, 0) / 1000,
       a.updated_at
FROM assets a WHERE a.status = 'processing';

-- When the attempt holding a part or a template's media claimed it (a render's is its
-- `started_at`): a unit being worked on weighs at least the time it has taken.
ALTER TABLE render_parts ADD COLUMN claimed_at BIGINT;
ALTER TABLE template_media ADD COLUMN claimed_at BIGINT;

-- What each account's units used lately, for its share: the slot-milliseconds of the
-- attempts that ended, fading to nothing over 10 minutes from `used_at` (one row per
-- account, updated as each attempt ends: a claim reads it at no cost).
ALTER TABLE account_claims ADD COLUMN used_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_claims ADD COLUMN used_at BIGINT NOT NULL DEFAULT 0;

-- The slot-milliseconds each attempt at a conversion took, by account, for the last
-- hour: what the conversion budget counts.
CREATE TABLE work_used (
    account   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    ended_at  BIGINT NOT NULL,
    used_ms   BIGINT NOT NULL
);
CREATE INDEX work_used_account ON work_used (account, ended_at);
