-- a step's per-process pooler samples of the bench phase (format 17+); the columns are PoolerProcessSample's fields (phase as _phase)
SELECT {columns} FROM pooler_process_samples WHERE step_id = ? AND _phase = 'bench' ORDER BY process, epoch
