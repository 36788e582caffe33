-- What a job's renders make (issue #21): the JSON of reelfarm_domain::output::Output,
-- e.g. {"format":"webm","transparent":true}; `{}` is an MP4.
ALTER TABLE jobs ADD COLUMN output TEXT NOT NULL DEFAULT '{}';
