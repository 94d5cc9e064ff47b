-- every run, oldest first; the columns are RunRecord's fields
SELECT {columns} FROM runs ORDER BY created_at
