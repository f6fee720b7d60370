-- droidpilot's schema on PostgreSQL: the same tables and meaning as migrations/sqlite/
-- 0001..0006 folded into one file, with PostgreSQL's own types (timestamptz, jsonb, bigint,
-- boolean). Ids are text in the "C" collation, so `id < $cursor` and `ORDER BY id` compare
-- bytes as SQLite does (UUIDv7 text sorts by creation time only byte-wise).
-- Task statuses are plain text with no CHECK listing them: new statuses need no migration.

CREATE TABLE devices (
    id          text COLLATE "C" PRIMARY KEY,
    backend     text NOT NULL,
    serial      text NOT NULL,
    model       text,
    state       text NOT NULL,
    info        jsonb,
    -- The droidpilot instance that owns the phone (several hosts on one database).
    instance    text,
    created_at  timestamptz NOT NULL,
    last_seen   timestamptz
);

CREATE TABLE tasks (
    id               text COLLATE "C" PRIMARY KEY,  -- UUIDv7: sorts by creation time
    status           text NOT NULL,
    instruction      text NOT NULL,
    priority         integer NOT NULL DEFAULT 0,
    max_steps        bigint NOT NULL,
    timeout_seconds  bigint NOT NULL,
    device_id        text,
    constraints      jsonb,
    agent            jsonb,
    external_id      text,
    session_id       text,
    metadata         jsonb,
    webhook_url      text,
    record           boolean NOT NULL DEFAULT false,
    assigned_device  text,
    -- The instance running (or that claimed) the task; NULL on a single host.
    instance         text,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    reason           text,
    answer           text,
    steps            bigint NOT NULL DEFAULT 0,
    tokens_in        bigint NOT NULL DEFAULT 0,
    tokens_out       bigint NOT NULL DEFAULT 0,
    cost_usd         double precision NOT NULL DEFAULT 0,
    model_calls      bigint NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false
);
-- The scheduler's pick: highest priority first, then oldest (ids are time-ordered).
CREATE INDEX tasks_queue ON tasks (status, priority DESC, id);
CREATE INDEX tasks_external ON tasks (external_id) WHERE external_id IS NOT NULL;

-- Content-addressed files under the data directory (screenshots, hierarchies).
CREATE TABLE artifacts (
    sha256      text COLLATE "C" PRIMARY KEY,
    kind        text NOT NULL,
    media_type  text NOT NULL,
    path        text NOT NULL,
    bytes       bigint NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE steps (
    task_id      text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    n            bigint NOT NULL,
    started_at   timestamptz NOT NULL,
    thinking     text,
    action       jsonb,
    raw          text,
    rejected     jsonb,
    result       jsonb,
    screen       jsonb,
    screenshot   text COLLATE "C" REFERENCES artifacts (sha256),
    timings      jsonb,
    tokens_in    bigint NOT NULL DEFAULT 0,
    tokens_out   bigint NOT NULL DEFAULT 0,
    cost_usd     double precision NOT NULL DEFAULT 0,
    model_calls  bigint NOT NULL DEFAULT 0,
    replay       jsonb,
    calls        jsonb,
    annotations  jsonb,
    PRIMARY KEY (task_id, n)
);

-- The last seq of each event stream. Appending an event bumps its row with
-- INSERT … ON CONFLICT DO UPDATE … RETURNING in the event's transaction: writers to one
-- stream (on any instance) queue on that row lock, so seq is gapless and never repeats.
CREATE TABLE streams (
    stream    text COLLATE "C" PRIMARY KEY,
    last_seq  bigint NOT NULL
);

-- Every published event, so a client that reconnects with ?since=SEQ misses nothing.
CREATE TABLE events (
    stream      text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL,
    type        text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (stream, seq)
);

CREATE TABLE interventions (
    id           text COLLATE "C" PRIMARY KEY,
    task_id      text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind         text NOT NULL,
    question     text,
    options      jsonb,
    answer       text,
    answered_by  text,
    created_at   timestamptz NOT NULL,
    answered_at  timestamptz
);
CREATE INDEX interventions_task ON interventions (task_id, created_at);

-- Scripts: one row per version; a healed or edited script is a new version.
CREATE TABLE scripts (
    id          text COLLATE "C" NOT NULL,
    version     integer NOT NULL,
    name        text NOT NULL,
    body        jsonb NOT NULL,
    source      jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (id, version)
);
