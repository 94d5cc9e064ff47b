-- an agent's word on its task: its state, with what it measured (result_json) or why it failed (reason)
UPDATE agent_tasks SET state = ?, result_json = coalesce(?, result_json), reason = coalesce(?, reason), updated_at = ?
WHERE task_id = ? AND state <> 'cancelled'
