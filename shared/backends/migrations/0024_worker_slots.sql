-- The slots each worker runs (REELFARM_WORKER_SLOTS): with the units being worked on and
-- waiting, what a worker splitting a long render counts as the farm's spare capacity.
ALTER TABLE workers ADD COLUMN slots BIGINT NOT NULL DEFAULT 1;
