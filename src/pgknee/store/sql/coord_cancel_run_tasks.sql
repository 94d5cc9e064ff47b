-- a run is over: its tasks not yet finished are cancelled
UPDATE agent_tasks SET state = 'cancelled', updated_at = ?
WHERE run_id = ? AND state IN ('assigned', 'ready', 'running')
