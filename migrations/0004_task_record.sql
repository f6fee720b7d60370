-- Whether the task records its run as a script (`"record": true`, navigator agent).
ALTER TABLE tasks ADD COLUMN record INTEGER NOT NULL DEFAULT 0;
