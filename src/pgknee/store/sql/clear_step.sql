-- every row a step's measurement left (a step whose results are imported again, or one of a
-- failed --extend that did not complete); the step's own row stays (remove_step.sql removes it)
DELETE FROM step_scripts WHERE step_id = :step_id;
DELETE FROM step_failures WHERE step_id = :step_id;
DELETE FROM step_progress WHERE step_id = :step_id;
DELETE FROM step_pg_stat_database WHERE step_id = :step_id;
DELETE FROM step_facts WHERE step_id = :step_id;
DELETE FROM step_pooler WHERE step_id = :step_id;
DELETE FROM pooler_samples WHERE step_id = :step_id;
DELETE FROM snapshots WHERE step_id = :step_id;
DELETE FROM snap_pg_stat_activity WHERE _step_id = :step_id;
DELETE FROM os_samples WHERE step_id = :step_id;
