-- a step's SHOW POOLS samples over its bench phase; the columns are PoolerSample's fields (phase as _phase)
SELECT {columns} FROM pooler_samples WHERE step_id = ? AND _phase = 'bench' ORDER BY epoch
