-- the source database's workload, PostgreSQL 14+: each top-level statement of pg_stat_statements (its
-- entries summed over users) with its calls, total execution time (ms) and rows
SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8, sum(rows)::bigint
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
GROUP BY query
