-- pg_wait_sampling's probes over a step's bench phase
INSERT INTO step_wait_sampling (step_id, probes, probes_counted, window_s, backends)
VALUES (:step_id, :probes, :probes_counted, :window_s, :backends)
