-- what a run is before --extend or --resume reopens it (a failed extension puts it back)
SELECT status, status_reason, finished_at, plan_json, steps_planned, owner, heartbeat_at FROM runs WHERE run_id = :run_id
