-- pg_stat_io now, PostgreSQL 18+: one row per backend type, object (relation, temp relation,
-- wal) and context, with the server's own byte counts (times with track_io_timing)
SELECT backend_type, object, context, coalesce(reads, 0) AS reads, coalesce(read_time, 0) AS read_ms,
       coalesce(writes, 0) AS writes, coalesce(write_time, 0) AS write_ms, coalesce(writebacks, 0) AS writebacks,
       coalesce(extends, 0) AS extends, coalesce(hits, 0) AS hits, coalesce(evictions, 0) AS evictions,
       coalesce(reuses, 0) AS reuses, coalesce(fsyncs, 0) AS fsyncs, coalesce(fsync_time, 0) AS fsync_ms,
       coalesce(read_bytes, 0)::float8 AS read_bytes, coalesce(write_bytes, 0)::float8 AS write_bytes
FROM pg_stat_io
