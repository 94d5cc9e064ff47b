-- what a step measured: from the transaction log (transactions .. lat_max_ms, lag), as pgbench printed it
-- (tps_pgbench, lat_avg_pgbench_ms, conn_time_ms) and from pg_stat_database (tps_db); a --duration auto
-- step's actual length replaces its maximum
UPDATE steps SET duration_s = coalesce(:duration_s, duration_s), status = :status, status_reason = :reason, bench_start = :bench_start, bench_end = :bench_end,
                 pgbench_exit = :pgbench_exit, tps_pgbench = :tps_pgbench, lat_avg_pgbench_ms = :lat_avg_pgbench_ms,
                 conn_time_ms = :conn_time_ms, tps_db = :tps_db, transactions = :transactions, failed = :failed,
                 retried = :retried, retries = :retries, tps = :tps, lat_avg_ms = :lat_avg_ms,
                 lat_stddev_ms = :lat_stddev_ms, lat_min_ms = :lat_min_ms, lat_p50_ms = :lat_p50_ms,
                 lat_p95_ms = :lat_p95_ms, lat_p99_ms = :lat_p99_ms, lat_max_ms = :lat_max_ms,
                 lag_avg_ms = :lag_avg_ms, lag_p99_ms = :lag_p99_ms, lag_max_ms = :lag_max_ms
WHERE step_id = :step_id
