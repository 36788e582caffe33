-- Library objects (assets): one row per upload, with its converted renditions.
CREATE TABLE assets (
    id              TEXT PRIMARY KEY,
    upload_id       TEXT NOT NULL,
    library_id      TEXT NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
    owner_user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    filename        TEXT NOT NULL,
    label           TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    -- created | uploading | processing | finished | failed
    status          TEXT NOT NULL,
    error           TEXT,
    -- sprite | svg | video | sound, known once probed
    kind            TEXT,
    content_type    TEXT,
    size            BIGINT,
    -- every blob of the asset lives under this unguessable prefix
    blob_prefix     TEXT NOT NULL,
    original_key    TEXT,
    -- the PUT currently streaming the original (a stale one can be taken over)
    upload_attempt  TEXT,
    duration_ms     BIGINT,
    alpha           BIGINT NOT NULL DEFAULT 0,
    thumb_key       TEXT,
    -- JSON array of renditions; JSON array of tags; JSON object of properties
    renditions      TEXT NOT NULL DEFAULT '[]',
    tags            TEXT NOT NULL DEFAULT '[]',
    properties      TEXT NOT NULL DEFAULT '{}',
    premium         BIGINT NOT NULL DEFAULT 0,
    -- the worker that converted it (operators' diagnostics)
    converted_by    TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX assets_library ON assets (library_id, created_at DESC, id DESC);
