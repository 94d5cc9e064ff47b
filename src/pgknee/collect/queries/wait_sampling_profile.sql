-- pg_wait_sampling's profile now: counts per backend and wait event (no event: on the CPU)
SELECT pid, coalesce(event_type, 'CPU'), coalesce(event, 'running'), sum(count)::bigint
FROM pg_wait_sampling_profile GROUP BY 1, 2, 3
