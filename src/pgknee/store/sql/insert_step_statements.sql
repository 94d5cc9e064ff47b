INSERT OR REPLACE INTO step_statements (run_id, step_id, statement, calls, total_ms) VALUES (?, ?, ?, ?, ?)
