-- The studio's working copies (issue #20): what a template's owner is editing and has not
-- saved yet, kept by the server so that a reload, a second api replica or a closed tab
-- loses nothing, with every edit a revision for undo and redo.
CREATE TABLE studio_sessions (
    template_id   TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,
    -- the saved version the working copy started from (a save sends it as base_version)
    base_version  BIGINT NOT NULL,
    -- the revision shown; undo and redo move it between `bottom` and `top`
    rev           BIGINT NOT NULL,
    bottom        BIGINT NOT NULL,
    top           BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (template_id, user_id)
);

CREATE TABLE studio_revisions (
    template_id  TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    rev          BIGINT NOT NULL,
    -- the template document at this revision (as typed: it may break rules)
    json         TEXT NOT NULL,
    PRIMARY KEY (template_id, user_id, rev)
);

CREATE INDEX studio_sessions_idle ON studio_sessions (updated_at);
