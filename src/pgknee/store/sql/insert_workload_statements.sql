INSERT OR REPLACE INTO workload_statements (run_id, statement, query, kind, captured_calls, captured_time)
VALUES (?, ?, ?, ?, ?, ?)
