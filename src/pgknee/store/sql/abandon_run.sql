-- a run whose pgknee died (found by its watchdog or a sweep): no longer 'running'
UPDATE runs SET status = 'abandoned', status_reason = :reason, finished_at = :at
WHERE run_id = :run_id AND status = 'running'
