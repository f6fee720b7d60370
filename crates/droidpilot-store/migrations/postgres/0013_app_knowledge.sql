-- What each installed app can do, written once per app version by the configured model
-- (`apps`), so a phone's apps are described once, not at every task.
CREATE TABLE app_knowledge (
    package     text COLLATE "C" NOT NULL,
    version     text COLLATE "C" NOT NULL,
    description text NOT NULL,
    model       text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (package, version)
);
