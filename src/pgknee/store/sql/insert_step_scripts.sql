-- one script's results in a step
INSERT INTO step_scripts (step_id, script_no, script, weight, transactions, failed, retried, tps, lat_avg_ms,
                          lat_stddev_ms, lat_p50_ms, lat_p95_ms, lat_p99_ms, lat_max_ms)
VALUES (:step_id, :script_no, :script, :weight, :transactions, :failed, :retried, :tps, :lat_avg_ms,
        :lat_stddev_ms, :lat_p50_ms, :lat_p95_ms, :lat_p99_ms, :lat_max_ms)
