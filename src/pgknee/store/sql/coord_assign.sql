-- an agent's part of a step (its spec), assigned; returns the task's id
INSERT INTO agent_tasks (run_id, step_id, agent, phase, spec_json, state, updated_at)
VALUES (?, ?, ?, ?, ?, 'assigned', ?)
RETURNING task_id
