-- Typed steps: the model's raw reply beside the parsed action, and what a rejected
-- answer sent (JSON), so `action` only ever holds an action that parsed.
ALTER TABLE steps ADD COLUMN raw TEXT;
ALTER TABLE steps ADD COLUMN rejected TEXT;
