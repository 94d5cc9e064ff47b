-- pgknee collector database, format 12: a captured workload's statements (what pg_stat_statements
-- showed on the source: each one's share of calls and of time) and, per step, what the replay ran
-- of each (calls and time from pg_stat_statements on the target), for the resemblance check.
CREATE TABLE workload_statements (
    run_id        TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    statement     TEXT NOT NULL,
    query         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    captured_calls REAL NOT NULL,
    captured_time  REAL NOT NULL,
    PRIMARY KEY (run_id, statement)
);
CREATE TABLE step_statements (
    run_id    TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    step_id   INTEGER NOT NULL REFERENCES steps(step_id) ON DELETE CASCADE,
    statement TEXT NOT NULL,
    calls     INTEGER NOT NULL,
    total_ms  REAL NOT NULL,
    PRIMARY KEY (step_id, statement)
);
