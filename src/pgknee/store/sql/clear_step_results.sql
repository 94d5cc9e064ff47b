-- a step's results before they are imported again from its side file: every row of its
-- measurement but the pg_stat_activity samples written in batches while the step ran, before
-- the store refused (the side file holds the samples from :samples_from on; those are replaced)
DELETE FROM step_scripts WHERE step_id = :step_id;
DELETE FROM step_failures WHERE step_id = :step_id;
DELETE FROM step_progress WHERE step_id = :step_id;
DELETE FROM step_pg_stat_database WHERE step_id = :step_id;
DELETE FROM step_facts WHERE step_id = :step_id;
DELETE FROM step_pooler WHERE step_id = :step_id;
DELETE FROM pooler_samples WHERE step_id = :step_id;
DELETE FROM os_samples WHERE step_id = :step_id;
DELETE FROM snapshots WHERE step_id = :step_id AND _collected_at >= :samples_from;
DELETE FROM snap_pg_stat_activity WHERE _step_id = :step_id AND _collected_at >= :samples_from;
