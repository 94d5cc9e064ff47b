-- one item of a run's environment (written again, it replaces the value)
INSERT INTO run_environment (run_id, key, value) VALUES (:run_id, :key, :value)
ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value
