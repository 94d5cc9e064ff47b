-- each top-level statement's calls in the source database now, without its text (the cheap read,
-- made every 100 ms through the window: which statements' calls move together)
SELECT /* pgknee:observe */ queryid, sum(calls)::bigint
FROM pg_stat_statements(false)
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
GROUP BY queryid
