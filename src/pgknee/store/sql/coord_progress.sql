-- pgbench's progress lines of a task so far (the agent's heartbeat writes them while it runs)
UPDATE agent_tasks SET progress_json = ? WHERE task_id = ?
