-- every agent registered in the store; the columns are coord.AgentRow's fields (a unit test holds them to it)
SELECT name, host, pid, cpus, pgbench, pgbench_version, rtt_ms, clock_offset_ms, clock_error_ms, registered_at,
       heartbeat_at, run_id, state
FROM agents ORDER BY name
