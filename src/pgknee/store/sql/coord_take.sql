-- a waiting agent, taken for a run (unless another coordinator took it first)
UPDATE agents SET state = 'taken', run_id = ? WHERE name = ? AND state = 'waiting'
