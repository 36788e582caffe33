-- Jobs (spec §2.7, §4.7): one request of a user for a template, with one render (job
-- video) per element of its `values`, and the projects it created.
CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    template_id     TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
    -- started | finished | error
    status          TEXT NOT NULL,
    -- default | 480p | 720p | 1080p
    quality         TEXT NOT NULL,
    create_render   BIGINT NOT NULL,
    create_project  BIGINT NOT NULL,
    -- JSON array of the request's notifications, as validated
    notifications   TEXT NOT NULL DEFAULT '[]',
    -- whose credits paid for the renders: `user:ID` or `group:ID` (refunds go there)
    credit_account  TEXT,
    created_at      BIGINT NOT NULL,
    finished_at     BIGINT
);
CREATE INDEX jobs_user ON jobs (user_id, created_at DESC, id DESC);
CREATE INDEX jobs_template ON jobs (template_id, user_id, created_at DESC, id DESC);

-- One video of a job.
CREATE TABLE renders (
    id                  TEXT PRIMARY KEY,
    job_id              TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    -- index of its element in the request's `values`
    position            BIGINT NOT NULL,
    external_id         TEXT NOT NULL DEFAULT '',
    title               TEXT NOT NULL DEFAULT '',
    -- JSON: the element's `metadata` (passed through) and `template_variables`
    metadata            TEXT NOT NULL DEFAULT '{}',
    template_variables  TEXT NOT NULL DEFAULT '{}',
    -- pending | started | success | failed
    status              TEXT NOT NULL,
    error               TEXT,
    -- 1 while a credit taken for it is not refunded
    charged             BIGINT NOT NULL DEFAULT 0,
    project_id          TEXT,
    video_key           TEXT,
    thumb_key           TEXT,
    width               BIGINT,
    height              BIGINT,
    duration_ms         BIGINT,
    -- deliveries that started rendering it, and the worker of the last one
    attempts            BIGINT NOT NULL DEFAULT 0,
    worker              TEXT,
    created_at          BIGINT NOT NULL,
    started_at          BIGINT,
    finished_at         BIGINT
);
CREATE INDEX renders_job ON renders (job_id, position);

-- A template's definition with a job's values applied (`create_project`).
CREATE TABLE projects (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    template_id  TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
    job_id       TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    render_id    TEXT NOT NULL,
    title        TEXT NOT NULL DEFAULT '',
    json         TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- `Idempotency-Key` of job requests: the first response, for 24 hours.
CREATE TABLE idempotency_keys (
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    idem_key      TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    job_id        TEXT NOT NULL,
    response      TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, idem_key)
);
