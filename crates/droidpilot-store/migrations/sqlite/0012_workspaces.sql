-- Stored Maestro workspaces: one row per version, like scripts; a new upload or a healed
-- flow is a new version and the old ones are kept. `body` is the version as the API shows
-- it (JSON WorkspaceVersion: files' paths and sizes, what config.yaml selects), `files`
-- the files' text (JSON object path → text), read only when a version's files are asked
-- for or run.
CREATE TABLE workspaces (
    id          TEXT NOT NULL,             -- UUIDv7, shared by the versions
    version     INTEGER NOT NULL,          -- 1, 2, …
    name        TEXT NOT NULL,
    body        TEXT NOT NULL,             -- JSON WorkspaceVersion
    files       TEXT NOT NULL,             -- JSON {path: text}
    created_at  TEXT NOT NULL,
    PRIMARY KEY (id, version)
);
