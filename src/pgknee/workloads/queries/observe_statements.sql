-- each top-level statement of the source database in pg_stat_statements now (entries summed over
-- users): its text (read, never kept unless scripted), calls, total execution time (ms), rows and the shared
-- blocks its executions hit and read
SELECT /* pgknee:observe */ queryid, min(query), sum(calls)::bigint, sum(total_exec_time)::float8, sum(rows)::bigint,
       sum(shared_blks_hit + shared_blks_read)::bigint
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
GROUP BY queryid
