-- a table's rows of the run's steps, by its step column; table and columns from the store's own schema
SELECT {columns} FROM {table} WHERE {step_column} IN ({steps})
