-- the steps an extension began (after the run's last step before it)
SELECT step_id, clients, status FROM steps WHERE run_id = :run_id AND step_id > :after ORDER BY seq
