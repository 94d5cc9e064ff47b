-- a run whose pgknee died (found by its watchdog or a sweep): no longer 'running'; unless another
-- pgknee has taken it over since (--resume), which made itself its owner
UPDATE runs SET status = 'abandoned', status_reason = :reason, finished_at = :at
WHERE run_id = :run_id AND status = 'running' AND (owner IS NULL OR owner = :owner)
