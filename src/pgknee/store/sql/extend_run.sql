-- pgknee run --extend (and --resume): the stored run reopened for more steps, with its plan's client
-- counts merged; the writer has checked, in the same write transaction, that no live pgknee holds it
UPDATE runs SET status = 'running', status_reason = NULL, finished_at = NULL, plan_json = :plan_json,
                steps_planned = steps_planned + :more_steps, owner = :owner
WHERE run_id = :run_id
