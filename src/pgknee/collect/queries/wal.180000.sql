-- pg_stat_wal now, PostgreSQL 18+: writes and syncs moved to pg_stat_io (object 'wal', context
-- 'normal': XLogWrite's writes and fsyncs; 'init' is the zero-filling of new segments), their
-- times with track_io_timing
SELECT w.wal_records AS records, w.wal_fpi AS fpi, w.wal_bytes::float8 AS bytes, w.wal_buffers_full AS buffers_full,
       io.writes, io.syncs, io.write_ms, io.sync_ms
FROM pg_stat_wal w,
     (SELECT sum(writes)::bigint AS writes, sum(fsyncs)::bigint AS syncs, sum(write_time) AS write_ms,
             sum(fsync_time) AS sync_ms
      FROM pg_stat_io WHERE object = 'wal' AND context = 'normal') io
