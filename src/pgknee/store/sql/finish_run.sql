-- how a run ended: its status, why, and when
UPDATE runs SET status = :status, status_reason = :reason, finished_at = :finished_at WHERE run_id = :run_id
