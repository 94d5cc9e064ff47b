-- a run's last command's id (0: none), before --extend adds more (a failed extension removes those after it)
SELECT coalesce(max(id), 0) FROM run_commands WHERE run_id = :run_id
