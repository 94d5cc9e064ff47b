-- a run's last step's id (0: none), before --extend adds more (extension_steps.sql reads those after it)
SELECT coalesce(max(step_id), 0) FROM steps WHERE run_id = :run_id
