-- what a step replayed of one captured statement (written again, it replaces the counts)
INSERT INTO step_statements (run_id, step_id, statement, calls, total_ms) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (step_id, statement) DO UPDATE SET calls = excluded.calls, total_ms = excluded.total_ms
