-- The farm shared fairly (issue #18): workers claim renders from the database in the
-- order of the scheduler (the account with the fewest running renders for its weight
-- first; within an account by priority, then first come first served) instead of in the
-- bus's order. A render message is a token for one claim.

-- Whose share a render is counted in: the account that pays for its job, `user:ID` or
-- `group:ID`, whether or not it charges credits.
ALTER TABLE renders ADD COLUMN account TEXT NOT NULL DEFAULT '';
-- 0 low, 1 normal, 2 high; 3 a draft's (ahead of every batch render).
ALTER TABLE renders ADD COLUMN priority BIGINT NOT NULL DEFAULT 1;
-- While `started`: until when its attempt is alive (its worker extends it every second);
-- past it the attempt counts as interrupted and any worker may claim the render again.
ALTER TABLE renders ADD COLUMN lease_until BIGINT;
-- While `pending` after a failed attempt: the earliest time of the next one.
ALTER TABLE renders ADD COLUMN not_before BIGINT NOT NULL DEFAULT 0;
-- The open renders, in the order the scheduler takes an account's.
CREATE INDEX renders_open ON renders (account, priority DESC, created_at, job_id, position)
    WHERE status IN ('pending', 'started');

UPDATE renders SET account = 'user:' || (SELECT user_id FROM jobs WHERE jobs.id = renders.job_id)
    WHERE status IN ('pending', 'started');

-- The priority a job was given (after the account's cap): low | normal | high.
ALTER TABLE jobs ADD COLUMN priority TEXT NOT NULL DEFAULT 'normal';

-- An account's share of the workers (its weight; 1 when absent) and the highest
-- priority its jobs may have; set by operators (`reelfarm admin share`).
CREATE TABLE account_shares (
    account       TEXT PRIMARY KEY,
    weight        BIGINT NOT NULL DEFAULT 1,
    max_priority  BIGINT NOT NULL DEFAULT 2,
    updated_at    BIGINT NOT NULL
);

-- When each account last had a render claimed: among accounts using the same share of
-- the workers, the one served longest ago goes first (with one worker slot, accounts
-- take turns).
CREATE TABLE account_claims (
    account     TEXT PRIMARY KEY,
    claimed_at  BIGINT NOT NULL
);
