-- one wait event's count in a step's pg_wait_sampling profile
INSERT INTO step_wait_profile (step_id, wait_event_type, wait_event, count)
VALUES (:step_id, :wait_event_type, :wait_event, :count)
