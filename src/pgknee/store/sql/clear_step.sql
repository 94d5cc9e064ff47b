-- every row of a step's measurement but its pg_stat_activity samples (clear_step_samples.sql),
-- before a side file's import writes them again or a failed --extend removes the step; the
-- step's own row stays (remove_step.sql removes it)
DELETE FROM step_scripts WHERE step_id = :step_id;
DELETE FROM step_failures WHERE step_id = :step_id;
DELETE FROM step_progress WHERE step_id = :step_id;
DELETE FROM step_pg_stat_database WHERE step_id = :step_id;
DELETE FROM step_facts WHERE step_id = :step_id;
DELETE FROM step_pooler WHERE step_id = :step_id;
DELETE FROM pooler_samples WHERE step_id = :step_id;
DELETE FROM pooler_process_samples WHERE step_id = :step_id;
DELETE FROM os_samples WHERE step_id = :step_id;
DELETE FROM server_os_samples WHERE step_id = :step_id;
DELETE FROM step_wait_profile WHERE step_id = :step_id;
DELETE FROM step_wait_sampling WHERE step_id = :step_id;
DELETE FROM step_agents WHERE step_id = :step_id;
DELETE FROM step_wal WHERE step_id = :step_id;
DELETE FROM step_checkpoints WHERE step_id = :step_id;
DELETE FROM step_io WHERE step_id = :step_id;
DELETE FROM step_kcache WHERE step_id = :step_id;
