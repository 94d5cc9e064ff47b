-- a task's state and its start time, if set
SELECT state, start_at FROM agent_tasks WHERE task_id = ?
