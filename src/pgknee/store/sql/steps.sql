-- a run's steps in their order; the columns are StepRecord's fields
SELECT {columns} FROM steps WHERE run_id = ? ORDER BY seq
