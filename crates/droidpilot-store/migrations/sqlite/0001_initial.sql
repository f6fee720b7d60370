-- droidpilot's schema. Times are RFC 3339 UTC text (sortable, readable with the sqlite3 CLI);
-- JSON columns hold serde_json documents. Written to be portable to PostgreSQL: no SQLite-only
-- types, every table keyed explicitly.

CREATE TABLE devices (
    id          TEXT PRIMARY KEY,          -- pool id, usually the serial
    backend     TEXT NOT NULL,             -- 'sim' | 'adb'
    serial      TEXT NOT NULL,
    model       TEXT,
    state       TEXT NOT NULL,             -- available | leased | offline | quarantined
    info        TEXT,                      -- JSON DeviceInfo, last seen
    created_at  TEXT NOT NULL,
    last_seen   TEXT
);

CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,     -- UUIDv7: sorts by creation time
    status           TEXT NOT NULL,
    instruction      TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    max_steps        INTEGER NOT NULL,
    timeout_seconds  INTEGER NOT NULL,
    device_id        TEXT,                 -- requested device
    constraints      TEXT,                 -- JSON DeviceConstraints
    agent            TEXT,                 -- JSON agent spec
    external_id      TEXT,                 -- the caller's id (coordinator task_id)
    session_id       TEXT,
    metadata         TEXT,                 -- JSON
    assigned_device  TEXT,
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    reason           TEXT,
    answer           TEXT,
    steps            INTEGER NOT NULL DEFAULT 0,
    tokens_in        INTEGER NOT NULL DEFAULT 0,
    tokens_out       INTEGER NOT NULL DEFAULT 0,
    cost_usd         REAL NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
-- The scheduler's pick: highest priority first, then oldest (ids are time-ordered).
CREATE INDEX tasks_queue ON tasks (status, priority DESC, id);
CREATE INDEX tasks_external ON tasks (external_id) WHERE external_id IS NOT NULL;

CREATE TABLE steps (
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    n            INTEGER NOT NULL,          -- 1-based step number
    started_at   TEXT NOT NULL,
    thinking     TEXT,
    action       TEXT,                      -- JSON Action
    result       TEXT,                      -- JSON outcome of the action
    screen       TEXT,                      -- JSON ScreenRepresentation summary
    screenshot   TEXT REFERENCES artifacts (sha256),
    timings      TEXT,                      -- JSON: screenshot/hierarchy/inference/action/settle ms
    tokens_in    INTEGER NOT NULL DEFAULT 0,
    tokens_out   INTEGER NOT NULL DEFAULT 0,
    cost_usd     REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, n)
);

-- Content-addressed files under the data directory (screenshots, hierarchies).
CREATE TABLE artifacts (
    sha256      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,              -- 'screenshot' | 'hierarchy' | …
    media_type  TEXT NOT NULL,
    path        TEXT NOT NULL,              -- relative to the data directory
    bytes       INTEGER NOT NULL,
    created_at  TEXT NOT NULL
);

-- Every published event, so a client that reconnects with ?since=SEQ misses nothing.
-- `stream` is a task id, or 'devices' for pool events; seq is monotonic per stream.
CREATE TABLE events (
    stream      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    payload     TEXT NOT NULL,              -- JSON
    created_at  TEXT NOT NULL,
    PRIMARY KEY (stream, seq)
);

-- Human interventions: ask_user prompts and their answers, manual takeovers, cancels.
CREATE TABLE interventions (
    id           TEXT PRIMARY KEY,          -- the prompt id for ask_user
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,             -- 'ask_user' | 'cancel' | 'takeover'
    question     TEXT,
    options      TEXT,                      -- JSON list
    answer       TEXT,
    answered_by  TEXT,                      -- 'rest' | 'websocket' | 'timeout'
    created_at   TEXT NOT NULL,
    answered_at  TEXT
);
CREATE INDEX interventions_task ON interventions (task_id, created_at);

CREATE TABLE scripts (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    description  TEXT,
    app_package  TEXT,
    steps        TEXT NOT NULL,             -- JSON list of selector steps
    source_task  TEXT,                      -- the task it was recorded from
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
