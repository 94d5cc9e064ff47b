-- what keeps a server from being quiet before a step (collect/pgstats.py): the last step's pgbench
-- backends still leaving, an immediate checkpoint running (CHECKPOINT, a restart's). The
-- checkpointer waits in CheckpointerMain between checkpoints and in CheckpointWriteDelay while it
-- spreads one over checkpoint_timeout x checkpoint_completion_target: under a write load that is
-- most of the time, so a spread checkpoint is counted apart (recorded, not waited for: it would
-- idle the sweep for minutes)
SELECT count(*) FILTER (WHERE backend_type = 'client backend' AND application_name = 'pgbench'),
       count(*) FILTER (WHERE backend_type = 'checkpointer'
                        AND wait_event IS DISTINCT FROM 'CheckpointerMain'
                        AND wait_event IS DISTINCT FROM 'CheckpointWriteDelay'),
       count(*) FILTER (WHERE backend_type = 'checkpointer' AND wait_event = 'CheckpointWriteDelay')
FROM pg_stat_activity
