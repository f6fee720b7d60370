-- A task may record the phone's screen (`record_video`); `recording` lists the MP4
-- segments stored as artifacts (JSON: sha256, bytes, started_at, duration_ms, width,
-- height), so deleting the task deletes them too.
ALTER TABLE tasks ADD COLUMN record_video INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN recording TEXT;
