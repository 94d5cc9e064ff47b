-- checkpoints so far, PostgreSQL 18+: pg_stat_checkpointer with num_done, the checkpoints
-- performed (timed and requested count the skipped ones too); and whether the checkpointer is in
-- one now (see checkpoints.120000.sql)
SELECT 'pg_stat_checkpointer' AS source, num_timed AS timed, num_requested AS requested, num_done AS done,
       buffers_written, write_time AS write_ms, sync_time AS sync_ms,
       EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'checkpointer'
               AND wait_event IS DISTINCT FROM 'CheckpointerMain') AS running
FROM pg_stat_checkpointer
