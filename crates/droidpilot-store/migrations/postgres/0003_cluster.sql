-- Several droidpilot instances on one database (issue 16).

-- One row per live instance. `heartbeat_at` is the database's clock (now()), so hosts
-- with skewed clocks still agree on who is dead. `boot` is random per process: a process
-- that finds its name held by another boot waits to see whether that one is alive.
CREATE TABLE instances (
    name           text COLLATE "C" PRIMARY KEY,
    boot           text NOT NULL,
    advertise_url  text,
    started_at     timestamptz NOT NULL,
    heartbeat_at   timestamptz NOT NULL
);

-- A device is identified farm-wide by (instance, id): every host may have a `sim-1`.
-- Rows copied from SQLite (one host, no instance) get ''.
UPDATE devices SET instance = '' WHERE instance IS NULL;
ALTER TABLE devices ALTER COLUMN instance SET DEFAULT '';
ALTER TABLE devices ALTER COLUMN instance SET NOT NULL;
ALTER TABLE devices DROP CONSTRAINT devices_pkey;
ALTER TABLE devices ADD PRIMARY KEY (instance, id);

-- The reaper and start-up recovery find an instance's held tasks by this.
CREATE INDEX tasks_instance ON tasks (instance, status) WHERE instance IS NOT NULL;
