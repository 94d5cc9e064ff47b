-- the steps a run left running when it ended early: failed, or interrupted
UPDATE steps SET status = :status, status_reason = :reason WHERE run_id = :run_id AND status = 'running'
