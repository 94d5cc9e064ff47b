-- a step of a failed --extend that did not complete (it measured nothing the run keeps), with
-- its command lines and its replay's statement mix (written as the step ran, not with its
-- measurement: a side file's import keeps them); its measurement's rows go first: clear_step.sql
DELETE FROM run_commands WHERE step_id = :step_id;
DELETE FROM step_statements WHERE step_id = :step_id;
DELETE FROM agent_tasks WHERE step_id = :step_id;
DELETE FROM steps WHERE step_id = :step_id;
