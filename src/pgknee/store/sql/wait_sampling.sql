-- pg_wait_sampling's probes over each of the steps that has a profile (format 11 on)
SELECT step_id, probes, probes_counted, window_s, backends FROM step_wait_sampling WHERE step_id IN ({steps})
