INSERT OR REPLACE INTO run_environment (run_id, key, value) VALUES (:run_id, :key, :value)
