-- the source database's client sessions now (pgknee's own left out), with the server's clock; one
-- row with no session when there is none. A session of another role, without pg_read_all_stats,
-- shows no state: counted as hidden, not read.
-- (the mark inside the statement: PostgreSQL 18's pg_stat_statements drops a comment before it)
SELECT /* pgknee:observe */ extract(epoch FROM n.now)::float8, a.pid, extract(epoch FROM a.backend_start)::float8,
       extract(epoch FROM a.xact_start)::float8, a.state, extract(epoch FROM a.state_change)::float8, a.query_id,
       extract(epoch FROM a.query_start)::float8
FROM (SELECT clock_timestamp() AS now) AS n
LEFT JOIN pg_stat_activity AS a
       ON a.datname = current_database() AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
      AND left(coalesce(a.application_name, ''), 7) <> 'pgknee:'
