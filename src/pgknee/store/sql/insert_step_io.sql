-- one row of pg_stat_io over a step's bench phase (model.server.IoStep; its fields the columns)
INSERT INTO step_io (step_id, backend_type, object, context, reads, read_ms, writes, write_ms, writebacks, extends, hits, evictions, reuses, fsyncs, fsync_ms, read_bytes, write_bytes)
VALUES (:step_id, :backend_type, :object, :context, :reads, :read_ms, :writes, :write_ms, :writebacks, :extends, :hits, :evictions, :reuses, :fsyncs, :fsync_ms, :read_bytes, :write_bytes)
