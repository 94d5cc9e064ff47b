-- checkpoints so far, PostgreSQL 17: pg_stat_checkpointer (a skipped timed checkpoint counts as
-- timed); and whether the checkpointer is in one now (see checkpoints.120000.sql)
SELECT 'pg_stat_checkpointer' AS source, num_timed AS timed, num_requested AS requested, NULL::bigint AS done,
       buffers_written, write_time AS write_ms, sync_time AS sync_ms,
       EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'checkpointer'
               AND wait_event IS DISTINCT FROM 'CheckpointerMain') AS running
FROM pg_stat_checkpointer
