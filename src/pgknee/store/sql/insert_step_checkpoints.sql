-- the checkpoints over a step's bench phase (model.server.CheckpointStep; its fields the columns)
INSERT INTO step_checkpoints (step_id, source, timed, requested, done, buffers_written, write_ms, sync_ms, running_at_start, running_at_end)
VALUES (:step_id, :source, :timed, :requested, :done, :buffers_written, :write_ms, :sync_ms, :running_at_start, :running_at_end)
