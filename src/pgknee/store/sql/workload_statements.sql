-- a captured workload's statements as captured: their shares of calls and of time
SELECT statement, query, kind, captured_calls, captured_time FROM workload_statements WHERE run_id = ?
ORDER BY statement
