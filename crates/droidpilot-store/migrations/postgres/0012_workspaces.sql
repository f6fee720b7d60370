-- Stored Maestro workspaces: one row per version, like scripts; a new upload or a healed
-- flow is a new version and the old ones are kept. `body` is the version as the API shows
-- it (JSON WorkspaceVersion: files' paths and sizes, what config.yaml selects), `files`
-- the files' text (JSON object path → text), read only when a version's files are asked
-- for or run.
CREATE TABLE workspaces (
    id          text COLLATE "C" NOT NULL,
    version     integer NOT NULL,
    name        text NOT NULL,
    body        jsonb NOT NULL,
    files       jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (id, version)
);
