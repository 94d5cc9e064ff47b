-- one agent's share of a step run by agents (store/sql/step_agents.sql reads it back)
INSERT INTO step_agents (run_id, step_id, agent, host, clients, threads, cpus, exit_code, transactions, failed, tps, bench_start, bench_end, cpu_pct, rtt_ms, clock_offset_ms, lat_p50_ms, lat_p99_ms)
VALUES (:run_id, :step_id, :agent, :host, :clients, :threads, :cpus, :exit_code, :transactions, :failed, :tps, :bench_start, :bench_end, :cpu_pct, :rtt_ms, :clock_offset_ms, :lat_p50_ms, :lat_p99_ms)
