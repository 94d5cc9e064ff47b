-- a kind's rows of the steps, for store.db.Store.records: its table and the columns its `stored_in` names
SELECT step_id, {columns} FROM {table} WHERE step_id IN ({steps}) ORDER BY step_id
