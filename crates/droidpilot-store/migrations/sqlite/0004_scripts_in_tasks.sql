-- Whether the task records its run as a script (`"record": true`, navigator agent).
ALTER TABLE tasks ADD COLUMN record INTEGER NOT NULL DEFAULT 0;
-- Model calls, per step and per task, so "a replay made zero model calls" is measurable.
ALTER TABLE tasks ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
-- Script replays: which script step, selector and fallback (JSON ReplayInfo).
ALTER TABLE steps ADD COLUMN replay TEXT;
