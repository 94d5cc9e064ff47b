-- a run's whole environment, before a failed --extend writes it back as it was
DELETE FROM run_environment WHERE run_id = :run_id
