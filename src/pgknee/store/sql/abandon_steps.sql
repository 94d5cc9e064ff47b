-- the steps it left running
UPDATE steps SET status = 'interrupted', status_reason = :reason WHERE run_id = :run_id AND status = 'running'
