-- whether the store has the run (1, or no row)
SELECT 1 FROM runs WHERE run_id = :run_id
