-- Planned agents and chains: every model call of a step by role (JSON array of
-- ModelCall), and what the planner, progress checker and verifier said (JSON array of
-- Annotation). NULL in steps written before.
ALTER TABLE steps ADD COLUMN calls TEXT;
ALTER TABLE steps ADD COLUMN annotations TEXT;
