-- When the pgknee writing a run last wrote to it (epoch seconds, its host's clock): a run left
-- 'running' by a pgknee on another host (a PostgreSQL store shared by several, a coordinator
-- pod replaced) is taken as abandoned once this is old enough (store/claims.py), where the pid
-- of a process on another host tells nothing
ALTER TABLE runs ADD COLUMN heartbeat_at REAL;
