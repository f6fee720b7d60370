-- Take-over (issue 15), as sqlite/0007: interventions are no longer only questions. A
-- person's action on a paused task ('manual_action') and a screen change nobody in
-- droidpilot caused ('external_change') are rows too. NULL in rows written before.
ALTER TABLE interventions ADD COLUMN actor text;   -- who acted ('by' on the wire)
ALTER TABLE interventions ADD COLUMN action jsonb; -- the action as recorded (passwords masked)
ALTER TABLE interventions ADD COLUMN step integer; -- the trajectory step it belongs to
ALTER TABLE interventions ADD COLUMN detail jsonb; -- outcome, or what changed
-- The person who took a step during a take-over (NULL: the agent, or an MCP client).
ALTER TABLE steps ADD COLUMN actor text;
