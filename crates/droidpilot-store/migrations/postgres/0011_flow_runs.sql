-- Flow runs: a Maestro workspace run across the pool, one `flow` task per flow. `body` is
-- the whole `FlowRun` (options, status, per-flow results) as JSON, rewritten as flows end;
-- `status` is kept beside it to find runs a stopped process left running.
CREATE TABLE flow_runs (
    id          text COLLATE "C" PRIMARY KEY,
    status      text NOT NULL,
    body        jsonb NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX flow_runs_status ON flow_runs (status);
