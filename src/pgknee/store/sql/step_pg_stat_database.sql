-- a step's pg_stat_database deltas by counter
SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?
