-- pgknee collector database, format 6: idle sessions beside the workers, server settings per
-- variant (the embedded server restarted with them), and per-step facts (memory, idle sessions).
ALTER TABLE steps ADD COLUMN idle INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN idle_kind TEXT;
-- the variant's server settings as JSON, e.g. {"max_connections": "5000"}; NULL: the run's own
ALTER TABLE steps ADD COLUMN settings_json TEXT;

-- numbers measured once per step: mem.* and pss.* (kB) before the idle sessions opened
-- (before_idle.*) and at the end of the bench phase (end.*), idle.* (sessions opened, seconds
-- to open, still open at the end), setting.* (what the server reported after a restart)
CREATE TABLE step_facts (
    step_id INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   REAL NOT NULL,
    PRIMARY KEY (step_id, name)
);
