-- what the run's completed steps replayed of each captured statement
SELECT t.step_id, t.statement, t.calls, t.total_ms
FROM step_statements t JOIN steps s USING (step_id)
WHERE t.run_id = ? AND s.status = 'completed'
ORDER BY t.step_id, t.statement
