-- pg_stat_activity snapshot, PostgreSQL 12-13 (no query_id; leader_pid from 13).
-- One row always (the counts); session columns only for non-idle sessions.
WITH seen AS (
    SELECT * FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND left(coalesce(application_name, ''), 7) <> 'pgknee:'
      -- the benchmark's database (and the server-wide processes, which belong to none) unless
      -- every database was asked for
      AND (%(all_databases)s OR datid IS NULL OR datname = current_database())
), a AS (
    -- a row this role may not see (another role's session, a background process, without
    -- superuser or pg_read_all_stats) has no state, wait event or type: counted, never stored
    SELECT *, coalesce(query = '<insufficient privilege>' AND state IS NULL, false) AS _hidden FROM seen
)
SELECT c.backends, c.client_backends, c.active, c.idle_in_xact, c.hidden,
       s.pid, NULL::int AS leader_pid, s.datid::bigint, s.datname::text, s.usesysid::bigint, s.usename::text,
       s.application_name, host(s.client_addr), s.client_hostname, s.client_port,
       s.backend_start::text, s.xact_start::text, s.query_start::text, s.state_change::text,
       s.wait_event_type, s.wait_event, s.state, s.backend_xid::text, s.backend_xmin::text,
       NULL::bigint AS query_id, CASE WHEN %(query_text)s THEN s.query END AS query, s.backend_type
FROM (SELECT count(*) AS backends,
             count(*) FILTER (WHERE backend_type = 'client backend') AS client_backends,
             count(*) FILTER (WHERE state = 'active') AS active,
             count(*) FILTER (WHERE state IN ('idle in transaction', 'idle in transaction (aborted)')) AS idle_in_xact,
             count(*) FILTER (WHERE _hidden) AS hidden
      FROM a) AS c
LEFT JOIN a AS s ON NOT s._hidden AND s.state IS DISTINCT FROM 'idle'
                AND s.wait_event_type IS DISTINCT FROM 'Activity'
