-- a step's pg_stat_activity samples, all of them (:samples_from NULL), or those from
-- :samples_from on: the samples written in batches while the step ran, before the store refused
-- its results, stay when its side file (which holds the rest) is imported
DELETE FROM snapshots WHERE step_id = :step_id AND (CAST(:samples_from AS TEXT) IS NULL OR _collected_at >= :samples_from);
DELETE FROM snap_pg_stat_activity
WHERE _step_id = :step_id AND (CAST(:samples_from AS TEXT) IS NULL OR _collected_at >= :samples_from);
