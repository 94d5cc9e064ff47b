-- a step's pg_stat_database delta of one counter
INSERT INTO step_pg_stat_database (step_id, name, delta) VALUES (:step_id, :name, :delta)
