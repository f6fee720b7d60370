-- Scripts (issue 12): one row per version; a healed or edited script is a new version and
-- the old ones are kept. `body` is the JSON script document, `source` where it came from.
-- 0001 reserved a `scripts` table that no code ever wrote (names unique, no versions);
-- it is replaced, not migrated: it is always empty.
DROP TABLE scripts;
CREATE TABLE scripts (
    id          TEXT NOT NULL,             -- UUIDv7, shared by the versions
    version     INTEGER NOT NULL,          -- 1, 2, …
    name        TEXT NOT NULL,
    body        TEXT NOT NULL,             -- JSON Script
    source      TEXT NOT NULL,             -- JSON ScriptSource
    created_at  TEXT NOT NULL,
    PRIMARY KEY (id, version)
);
