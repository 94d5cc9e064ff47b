-- a run's last step's place in the run (0: none), where --extend or --resume goes on from
SELECT coalesce(max(seq), 0) FROM steps WHERE run_id = :run_id
