-- PostgreSQL's form of 0008_abandoned.sql: SQLite makes the runs table anew to change its CHECK,
-- which PostgreSQL does in place (a table made anew would lose the references to it)
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'interrupted', 'failed', 'abandoned'));
ALTER TABLE runs ADD COLUMN owner TEXT;
