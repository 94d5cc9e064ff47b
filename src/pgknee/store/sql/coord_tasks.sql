-- the tasks asked for, by agent; the columns in the order coord._task reads them
SELECT task_id, run_id, step_id, agent, phase, spec_json, state, start_at, result_json, reason, progress_json
FROM agent_tasks WHERE task_id IN ({tasks}) ORDER BY agent
