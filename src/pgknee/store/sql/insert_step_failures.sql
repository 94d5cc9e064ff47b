-- a step's failed transactions of one kind
INSERT INTO step_failures (step_id, kind, count) VALUES (:step_id, :kind, :count)
