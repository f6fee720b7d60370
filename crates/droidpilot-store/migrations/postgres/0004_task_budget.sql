-- Budgets beyond steps and time, as sqlite/0008: a task fails (`budget_exceeded`) once its
-- model calls used max_tokens tokens (in + out), or cost max_cost_usd. NULL: the
-- server's default (`[runner] max_tokens` / `max_cost_usd`; 0 there means none).
ALTER TABLE tasks ADD COLUMN max_tokens bigint;
ALTER TABLE tasks ADD COLUMN max_cost_usd double precision;
