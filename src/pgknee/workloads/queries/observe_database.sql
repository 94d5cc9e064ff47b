-- the source database's counters now (PostgreSQL 14+); times in milliseconds
SELECT /* pgknee:observe */ xact_commit, xact_rollback, active_time, idle_in_transaction_time, sessions, session_time,
       extract(epoch FROM clock_timestamp())::float8
FROM pg_stat_database WHERE datname = current_database()
