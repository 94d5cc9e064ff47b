-- pg_stat_database for the benchmark database now (autocommit: a fresh statistics snapshot),
-- when the server started, to tell a restart, and the tables autovacuum vacuumed and analyzed
-- here so far (its workers' transactions are commits in this database too)
SELECT d.*, extract(epoch FROM pg_postmaster_start_time()) AS postmaster_start,
       t.autovacuum_count, t.autoanalyze_count
FROM pg_stat_database d,
     (SELECT sum(autovacuum_count) AS autovacuum_count, sum(autoanalyze_count) AS autoanalyze_count
      FROM pg_stat_all_tables) t
WHERE d.datname = current_database()
