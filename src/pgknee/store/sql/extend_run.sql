-- pgknee run --extend: the stored run reopened for more steps, with its plan's client counts merged
UPDATE runs SET status = 'running', status_reason = NULL, finished_at = NULL, plan_json = :plan_json,
                steps_planned = steps_planned + :more_steps, owner = :owner
WHERE run_id = :run_id
