-- how many steps of a run completed (a run reopened must still be as it was read)
SELECT count(*) FROM steps WHERE run_id = :run_id AND status = 'completed'
