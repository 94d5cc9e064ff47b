-- a step's pg_wait_sampling profile: (type, event, count), the most frequent first
SELECT wait_event_type, wait_event, count FROM step_wait_profile WHERE step_id = ? ORDER BY count DESC, 1, 2
