-- Input tokens the model providers served from their prompt caches (priced at the cached
-- rate), per step and per task; part of tokens_in, as the providers count them.
ALTER TABLE steps ADD COLUMN tokens_cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN tokens_cached INTEGER NOT NULL DEFAULT 0;
