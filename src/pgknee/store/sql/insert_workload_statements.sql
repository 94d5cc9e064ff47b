-- one statement of a captured workload, as captured
INSERT INTO workload_statements (run_id, statement, query, kind, captured_calls, captured_time)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, statement) DO UPDATE SET query = excluded.query, kind = excluded.kind,
    captured_calls = excluded.captured_calls, captured_time = excluded.captured_time
