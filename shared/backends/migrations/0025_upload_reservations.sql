-- What an upload in progress holds of its owner's storage quota (its announced length, or
-- as much as may come), so that uploads at once cannot pass the quota together; zero
-- once it is stored or given up.
ALTER TABLE assets ADD COLUMN upload_reserved BIGINT NOT NULL DEFAULT 0;
