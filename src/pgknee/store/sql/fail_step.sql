-- a step that ended before it measured anything (its pooler or idle sessions would not start)
UPDATE steps SET status = 'failed', status_reason = :reason WHERE step_id = :step_id
