-- The WebVTT sidecar of a render with captions layers (issue #21); NULL without one.
ALTER TABLE renders ADD COLUMN captions_key TEXT;
