-- an agent's oldest task not yet finished; the columns in the order coord._task reads them
SELECT task_id, run_id, step_id, agent, phase, spec_json, state, start_at, result_json, reason, progress_json
FROM agent_tasks WHERE agent = ? AND state IN ('assigned', 'ready', 'running') ORDER BY task_id LIMIT 1
