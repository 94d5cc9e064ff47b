-- pg_stat_database for the benchmark database now (autocommit: a fresh statistics snapshot),
-- and when the server started, to tell a restart
SELECT *, extract(epoch FROM pg_postmaster_start_time()) AS postmaster_start
FROM pg_stat_database WHERE datname = current_database()
