-- Budgets beyond steps and time: a task fails (`budget_exceeded`) once its model calls
-- used max_tokens tokens (in + out), or cost max_cost_usd. NULL: the
-- server's default (`[runner] max_tokens` / `max_cost_usd`; 0 there means none).
ALTER TABLE tasks ADD COLUMN max_tokens INTEGER;
ALTER TABLE tasks ADD COLUMN max_cost_usd REAL;
