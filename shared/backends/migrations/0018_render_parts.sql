-- One long render on many workers (issue #18): a render longer than the split threshold
-- becomes parts — chunks of frames, its sound, and the join of them — that any workers
-- claim, lease and retry like renders, in the same order of the scheduler.

-- How many parts the render was split into (0: rendered whole). A split render stays
-- `started` without a lease of its own until its join ends it.
ALTER TABLE renders ADD COLUMN parts BIGINT NOT NULL DEFAULT 0;

CREATE TABLE render_parts (
    render_id    TEXT NOT NULL REFERENCES renders (id) ON DELETE CASCADE,
    part         BIGINT NOT NULL,
    -- frames | sound | join (claimable once every other part is done)
    kind         TEXT NOT NULL,
    -- the frames [first_frame, end_frame) of a chunk; the whole video for the others
    first_frame  BIGINT NOT NULL,
    end_frame    BIGINT NOT NULL,
    -- pending | started | done
    status       TEXT NOT NULL DEFAULT 'pending',
    attempts     BIGINT NOT NULL DEFAULT 0,
    worker       TEXT,
    lease_until  BIGINT,
    not_before   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (render_id, part)
);
CREATE INDEX render_parts_open ON render_parts (render_id) WHERE status IN ('pending', 'started');
