-- the commands a failed --extend added (those after the run's last before it)
DELETE FROM run_commands WHERE run_id = :run_id AND id > :after
