-- a table's rows of a run, by its run column; table and columns from the store's own schema
SELECT {columns} FROM {table} WHERE {run_column} = ?
