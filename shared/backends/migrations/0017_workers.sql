-- The workers of the farm (issue #18): each worker process keeps its row up to date, so
-- that operators see the fleet (`reelfarm admin worker list`) and a worker whose renders
-- keep failing where others succeed takes itself out of rotation.
CREATE TABLE workers (
    id               TEXT PRIMARY KEY,
    started_at       BIGINT NOT NULL,
    -- its last sign of life (every 10 s while it runs)
    seen_at          BIGINT NOT NULL,
    renders_ok       BIGINT NOT NULL DEFAULT 0,
    -- attempts that failed on our side (not bad input, not a remote server)
    renders_failed   BIGINT NOT NULL DEFAULT 0,
    last_success_at  BIGINT,
    -- set while out of rotation: it claims no renders
    out_since        BIGINT,
    out_reason       TEXT
);
