-- pgknee collector database, format 3: open-loop steps (pgbench --rate) and their schedule lag.
ALTER TABLE steps ADD COLUMN rate REAL;
ALTER TABLE steps ADD COLUMN lag_avg_ms REAL;
ALTER TABLE steps ADD COLUMN lag_p99_ms REAL;
ALTER TABLE steps ADD COLUMN lag_max_ms REAL;
