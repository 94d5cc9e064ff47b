-- pg_stat_wal over a step's bench phase (model.server.WalStep; its fields the columns)
INSERT INTO step_wal (step_id, records, fpi, bytes, buffers_full, writes, syncs, write_ms, sync_ms)
VALUES (:step_id, :records, :fpi, :bytes, :buffers_full, :writes, :syncs, :write_ms, :sync_ms)
