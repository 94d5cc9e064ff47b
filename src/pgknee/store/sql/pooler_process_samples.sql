-- a step's per-process pooler samples of the bench phase (format 17+)
SELECT {columns} FROM pooler_process_samples WHERE step_id = ? AND _phase = 'bench' ORDER BY process, epoch
