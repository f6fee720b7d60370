-- Where to POST the task's result when it finishes (the coordinator contract's webhook).
ALTER TABLE tasks ADD COLUMN webhook_url TEXT;
