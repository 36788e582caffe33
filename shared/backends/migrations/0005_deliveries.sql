-- Notification deliveries (spec §6): one row per notification of a finished render (and
-- per follow-up, such as the callback after a video-site upload), with its retry state;
-- the notifier claims due rows with a lease, so a delivery survives notifier restarts and
-- several notifiers share the work.
CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    -- what planned it: `{render_id}:{index in the job's notifications}` or `after:{parent id}`;
    -- a redelivered event plans nothing twice
    origin           TEXT NOT NULL UNIQUE,
    job_id           TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    render_id        TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    parent_id        TEXT,
    -- callback | email | upload-videosite | upload-cloudstorage
    kind             TEXT NOT NULL,
    -- the notification as validated (JSON, `{type, payload}`)
    notification     TEXT NOT NULL,
    -- the body a callback posts, fixed at planning so that every attempt sends the same bytes
    body             TEXT,
    -- pending | delivered | failed
    status           TEXT NOT NULL,
    -- attempts claimed so far; also the fence of the claim (a stale claimer's writes miss)
    attempts         BIGINT NOT NULL DEFAULT 0,
    -- when a pending delivery is due; a claimed one is due again when its lease ends
    -- (the claimer renews it while it works; a crashed claimer's delivery comes back)
    next_attempt_at  BIGINT,
    -- what the channel keeps between attempts (a resumable upload's session), JSON
    state            TEXT,
    -- what the delivery produced (an uploaded video's id), JSON
    result           TEXT,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    finished_at      BIGINT
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_job ON deliveries (job_id, created_at);

-- Every attempt of a delivery, as shown by `GET /generator/v1/jobs/{id}/notifications`.
CREATE TABLE delivery_attempts (
    delivery_id  TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    number       BIGINT NOT NULL,
    started_at   BIGINT NOT NULL,
    duration_ms  BIGINT NOT NULL,
    -- HTTP status or SMTP reply code of the answer, when there was one
    status_code  BIGINT,
    error        TEXT,
    -- delivered | retry | failed
    outcome      TEXT NOT NULL,
    PRIMARY KEY (delivery_id, number)
);
