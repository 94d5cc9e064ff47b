-- pgknee collector database, format 8: a run whose pgknee died is 'abandoned' (marked by its
-- watchdog or by a sweep), and every run says which pgknee wrote it (host:pid:start), so that a
-- run left 'running' by a pgknee that is gone can be told from one that runs.
-- SQLite cannot change a CHECK: the table is made anew (foreign keys are off while migrating).
CREATE TABLE runs_new (
    run_id        TEXT PRIMARY KEY,
    created_at    TEXT NOT NULL,
    finished_at   TEXT,
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed', 'abandoned')),
    status_reason TEXT,
    workload      TEXT NOT NULL,
    target_kind   TEXT NOT NULL,
    target_label  TEXT NOT NULL,
    plan_json     TEXT NOT NULL,
    steps_planned INTEGER NOT NULL,
    owner         TEXT
);
INSERT INTO runs_new (run_id, created_at, finished_at, status, status_reason, workload, target_kind, target_label,
                      plan_json, steps_planned)
SELECT run_id, created_at, finished_at, status, status_reason, workload, target_kind, target_label, plan_json,
       steps_planned FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
