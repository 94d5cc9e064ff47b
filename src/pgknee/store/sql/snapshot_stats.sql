-- the steps' snapshots in the phases: how many, mean client backends, mean query ms, mean backends
-- hidden from the sampling role (NULL before format 15)
SELECT count(*), avg(client_backends), avg(query_ms), avg(hidden) FROM snapshots
WHERE step_id IN ({steps}) AND _phase IN ({phases})
