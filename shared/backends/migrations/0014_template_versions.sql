-- Templates edited through the API and the studio, and drafts (issue #20). Every save is a new
-- version; the `templates` row holds the current one (its number in `version`), and jobs
-- pin the version they were validated against, so a save while a job waits does not
-- change what it renders. Deleting a template archives it: its jobs stay readable.
ALTER TABLE templates ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

CREATE TABLE template_versions (
    template_id  TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
    version      BIGINT NOT NULL,
    -- the template document of this version
    json         TEXT NOT NULL,
    -- JSON object: `file` path of the document → blob key (as on `templates`)
    files        TEXT NOT NULL DEFAULT '{}',
    -- the user who saved it (for an import, its owner); NULL for an import without one
    saved_by     TEXT,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (template_id, version)
);

INSERT INTO template_versions (template_id, version, json, files, saved_by, created_at)
    SELECT id, 1, json, files, owner_user_id, created_at FROM templates;

-- NULL for jobs made before versions: they render the current version.
ALTER TABLE jobs ADD COLUMN template_version BIGINT;

-- Drafts (`POST …/templates/{id}/draft`): a fast low-resolution render that costs no
-- credit, is not listed with the jobs and is deleted a day after it was made.
ALTER TABLE jobs ADD COLUMN draft BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_drafts ON jobs (draft, created_at);
