-- one of pgbench's progress lines of a step
INSERT INTO step_progress (step_id, t_s, tps, lat_ms, stddev_ms, failed)
VALUES (:step_id, :t_s, :tps, :lat_ms, :stddev_ms, :failed)
