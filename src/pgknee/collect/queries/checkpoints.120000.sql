-- checkpoints so far, up to PostgreSQL 16: pg_stat_bgwriter's counters (a skipped timed checkpoint
-- counts as timed); and whether the checkpointer is in one now (between checkpoints it waits in
-- CheckpointerMain; its wait event is shown to superusers and pg_read_all_stats)
SELECT 'pg_stat_bgwriter' AS source, checkpoints_timed AS timed, checkpoints_req AS requested, NULL::bigint AS done,
       buffers_checkpoint AS buffers_written, checkpoint_write_time AS write_ms, checkpoint_sync_time AS sync_ms,
       EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'checkpointer'
               AND wait_event IS DISTINCT FROM 'CheckpointerMain') AS running
FROM pg_stat_bgwriter
