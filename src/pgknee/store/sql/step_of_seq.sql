-- a run's step by its place in the run (a side file's step, imported)
SELECT step_id, status, variant, clients, rep FROM steps WHERE run_id = :run_id AND seq = :seq
