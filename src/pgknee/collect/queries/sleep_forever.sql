-- the reference session: asleep in a known wait event all along (its count is the probes)
SELECT pg_sleep(1e7)
