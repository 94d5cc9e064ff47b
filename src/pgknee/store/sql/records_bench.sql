-- a kind's rows of the steps' bench phase (a table of samples keeps every phase), for store.db.Store.records
SELECT step_id, {columns} FROM {table} WHERE step_id IN ({steps}) AND _phase = 'bench' ORDER BY step_id
