-- a step's row, 'running' until end_step.sql says what it measured; returns its id
INSERT INTO steps (run_id, seq, variant, clients, rep, threads, protocol, duration_s, warmup_s, status, started_at,
                   pipeline, connect_per_txn, rate, think_ms, pooler_kind, pool_mode, pool_size, pool_reserve, pool_processes,
                   idle, idle_kind, settings_json, rtt_ms, rtt_jitter_ms)
VALUES (:run_id, :seq, :variant, :clients, :rep, :threads, :protocol, :duration_s, :warmup_s, 'running', :started_at,
        :pipeline, :connect_per_txn, :rate, :think_ms, :pooler_kind, :pool_mode, :pool_size, :pool_reserve, :pool_processes,
        :idle, :idle_kind, :settings_json, :rtt_ms, :rtt_jitter_ms)
RETURNING step_id
