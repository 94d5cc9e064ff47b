-- pgbench's progress lines of a step: throughput over time
SELECT t_s, tps FROM step_progress WHERE step_id = ? ORDER BY t_s
