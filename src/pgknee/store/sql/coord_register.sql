-- an agent, waiting for a run; a name registered before is taken over (the same pod again). The
-- columns are coord.AgentRow's fields (a unit test holds them to it)
INSERT INTO agents (name, host, pid, cpus, pgbench, pgbench_version, rtt_ms, clock_offset_ms, clock_error_ms,
                    registered_at, heartbeat_at, run_id, state)
VALUES (:name, :host, :pid, :cpus, :pgbench, :pgbench_version, :rtt_ms, :clock_offset_ms, :clock_error_ms,
        :registered_at, :heartbeat_at, :run_id, :state)
ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid, cpus = excluded.cpus,
    pgbench = excluded.pgbench, pgbench_version = excluded.pgbench_version, rtt_ms = excluded.rtt_ms,
    clock_offset_ms = excluded.clock_offset_ms, clock_error_ms = excluded.clock_error_ms,
    registered_at = excluded.registered_at, heartbeat_at = excluded.heartbeat_at, run_id = excluded.run_id,
    state = excluded.state
