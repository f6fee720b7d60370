-- What each installed app can do, written once per app version by the configured model
-- (`apps`), so a phone's apps are described once, not at every task.
CREATE TABLE app_knowledge (
    package     TEXT NOT NULL,
    version     TEXT NOT NULL,
    description TEXT NOT NULL,
    model       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (package, version)
);
