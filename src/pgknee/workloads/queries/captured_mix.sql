-- the replay's statements on the target: each top-level statement of pg_stat_statements in this database (its
-- entries summed over users) with its calls and total execution time (ms) so far
SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8 FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
GROUP BY query
