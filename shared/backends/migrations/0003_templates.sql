-- Templates: a validated template document (the spec's `json`) with its listing fields,
-- the stored placeholder media of its `file` sources, and its rendered thumb and preview.
CREATE TABLE templates (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    -- NULL: a public template of the operator's
    owner_user_id   TEXT REFERENCES users(id) ON DELETE CASCADE,
    public          BIGINT NOT NULL DEFAULT 0,
    category        TEXT NOT NULL DEFAULT '',
    -- JSON array of strings
    tags            TEXT NOT NULL DEFAULT '[]',
    -- the template document as imported
    json            TEXT NOT NULL,
    -- length of the output video
    duration_ms     BIGINT NOT NULL,
    -- 480p | 720p | 1080p, from the canvas's shorter side
    quality         TEXT NOT NULL,
    -- every blob of the template lives under this unguessable prefix
    blob_prefix     TEXT NOT NULL,
    -- JSON object: `file` path of the document → blob key of the stored file
    files           TEXT NOT NULL DEFAULT '{}',
    thumb_key       TEXT,
    preview_key     TEXT,
    archived        BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL
);
CREATE INDEX templates_owner ON templates (owner_user_id);
CREATE INDEX templates_public ON templates (public, created_at DESC, id DESC);

-- Who else may see (and render) a template: a user, or every member of a group.
CREATE TABLE template_shares (
    template_id     TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
    user_id         TEXT REFERENCES users(id) ON DELETE CASCADE,
    group_id        TEXT REFERENCES user_groups(id) ON DELETE CASCADE,
    created_at      BIGINT NOT NULL,
    CHECK ((user_id IS NULL) <> (group_id IS NULL))
);
CREATE UNIQUE INDEX template_shares_user ON template_shares (template_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX template_shares_group ON template_shares (template_id, group_id) WHERE group_id IS NOT NULL;
CREATE INDEX template_shares_by_user ON template_shares (user_id);
CREATE INDEX template_shares_by_group ON template_shares (group_id);
