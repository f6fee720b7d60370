-- Flow runs: a Maestro workspace run across the pool, one `flow` task per flow. `body` is
-- the whole `FlowRun` (options, status, per-flow results) as JSON, rewritten as flows end;
-- `status` is kept beside it to find runs a stopped process left running.
CREATE TABLE flow_runs (
    id          TEXT PRIMARY KEY,          -- UUIDv7
    status      TEXT NOT NULL,
    body        TEXT NOT NULL,             -- JSON FlowRun
    created_at  TEXT NOT NULL
);
CREATE INDEX flow_runs_status ON flow_runs (status);
