-- a run put back as it was before a failed --extend (with the extension's completed steps, if any)
UPDATE runs SET status = :status, status_reason = :reason, finished_at = :finished_at, plan_json = :plan_json,
                steps_planned = :steps_planned, owner = :owner,
                heartbeat_at = :heartbeat_at
WHERE run_id = :run_id
