-- on pgknee's own embedded server only (collect/waitsampling.py)
CREATE EXTENSION IF NOT EXISTS pg_wait_sampling
