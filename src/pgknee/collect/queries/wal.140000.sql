-- pg_stat_wal now, PostgreSQL 14 to 17: its own writes and syncs (their times with track_wal_io_timing)
SELECT wal_records AS records, wal_fpi AS fpi, wal_bytes::float8 AS bytes, wal_buffers_full AS buffers_full,
       wal_write AS writes, wal_sync AS syncs, wal_write_time AS write_ms, wal_sync_time AS sync_ms
FROM pg_stat_wal
