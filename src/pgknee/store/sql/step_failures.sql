-- a step's failed transactions by kind
SELECT kind, count FROM step_failures WHERE step_id = ?
