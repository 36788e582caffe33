-- One schema for SQLite and PostgreSQL: only TEXT and BIGINT columns (flags are 0/1,
-- timestamps Unix milliseconds), which both engines and sqlx's Any driver treat alike.

CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    credits         BIGINT NOT NULL DEFAULT 0,
    webhook_secret  TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);

CREATE TABLE user_groups (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    credits     BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL
);

CREATE TABLE group_members (
    group_id    TEXT NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    joined_at   BIGINT NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);

CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    prefix      TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
CREATE INDEX tokens_prefix ON tokens (prefix);

CREATE TABLE libraries (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL,           -- personal | group | public | stock
    owner_user_id   TEXT REFERENCES users(id) ON DELETE CASCADE,
    owner_group_id  TEXT REFERENCES user_groups(id) ON DELETE CASCADE,
    is_default      BIGINT NOT NULL DEFAULT 0,
    sort_order      BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL
);
CREATE INDEX libraries_user ON libraries (owner_user_id);
CREATE INDEX libraries_group ON libraries (owner_group_id);
CREATE INDEX libraries_kind ON libraries (kind);
-- At most one default library per user and per group, so "created on first use" cannot race.
CREATE UNIQUE INDEX libraries_one_default ON libraries (owner_user_id) WHERE is_default = 1;
CREATE UNIQUE INDEX libraries_one_group_default ON libraries (owner_group_id) WHERE is_default = 1;

-- Work to publish: written in the transaction of the change that causes it.
CREATE TABLE outbox (
    id            TEXT PRIMARY KEY,
    queue         TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    -- the relay leaves a row alone until then (a lease while it publishes)
    available_at  BIGINT NOT NULL,
    -- set when handed to a bus that acknowledges through the outbox (local bus)
    published_at  BIGINT,
    deliveries    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX outbox_due ON outbox (published_at, available_at);

-- Messages the local bus gave up on (RabbitMQ keeps its own dead-letter queues).
CREATE TABLE dead_letters (
    id          TEXT PRIMARY KEY,
    queue       TEXT NOT NULL,
    payload     TEXT NOT NULL,
    deliveries  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);

-- Ids of messages whose effects are committed: consumers insert here in the same
-- transaction as their effects, so a redelivered message is recognised and skipped.
CREATE TABLE handled_messages (
    message_id  TEXT PRIMARY KEY,
    handled_at  BIGINT NOT NULL
);
