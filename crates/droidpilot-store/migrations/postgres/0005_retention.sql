-- Deleting tasks (DELETE /v1/tasks/{id}, `[storage] retain_days`) and expiring screenshots
-- (`retain_artifact_days`): find ended tasks by age, and whether a screenshot is still
-- shown by some step, without scanning the tables.
CREATE INDEX tasks_finished ON tasks (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX steps_screenshot ON steps (screenshot) WHERE screenshot IS NOT NULL;
CREATE INDEX artifacts_created ON artifacts (created_at);
