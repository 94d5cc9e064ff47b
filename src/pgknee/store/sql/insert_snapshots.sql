-- one row per pg_stat_activity snapshot; the values in the order of collect.activity's snapshot rows
INSERT INTO snapshots (run_id, step_id, _collected_at, _phase, epoch, backends, client_backends, active,
                       idle_in_xact, hidden, query_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
