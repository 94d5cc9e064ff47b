-- a task's start time, common to the step's agents (on the store's clock)
UPDATE agent_tasks SET start_at = ?, updated_at = ? WHERE task_id = ?
