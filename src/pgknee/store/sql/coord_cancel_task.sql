-- a task no longer wanted (its step failed): an agent waiting to start it goes back to waiting
UPDATE agent_tasks SET state = 'cancelled', updated_at = ?
WHERE task_id = ? AND state IN ('assigned', 'ready', 'running')
