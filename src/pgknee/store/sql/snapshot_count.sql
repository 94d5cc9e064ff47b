-- how many pg_stat_activity snapshots the steps have in the phases
SELECT count(*) FROM snapshots WHERE step_id IN ({steps}) AND _phase IN ({phases})
