-- the source database's workload, PostgreSQL 14+: each top-level statement of pg_stat_statements (its
-- entries summed over users) with its calls, total execution time (ms), rows and the shared blocks its
-- executions hit and read
SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8, sum(rows)::bigint,
       sum(shared_blks_hit + shared_blks_read)::bigint
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
GROUP BY query
