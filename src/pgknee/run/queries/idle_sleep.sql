-- a sleep idle session's one query, for the step's length in seconds: active, but doing nothing
SELECT pg_sleep(%s)
