-- one kind of the server's records (WAL, checkpoints, I/O, ...) of the steps: its table is the
-- record's TABLE, its columns the record's fields (format 16 on)
SELECT step_id, {columns} FROM {table} WHERE step_id IN ({steps})
