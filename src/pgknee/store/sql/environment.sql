-- a run's environment: what pgknee noted of the host, the server, the workload
SELECT key, value FROM run_environment WHERE run_id = ? ORDER BY key
