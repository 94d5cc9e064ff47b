-- pgknee collector database, format 4: think time (a pause after each transaction, in
-- milliseconds); the step's latency figures exclude it.
ALTER TABLE steps ADD COLUMN think_ms REAL NOT NULL DEFAULT 0;
