-- pgknee collector database, format 5: steps through a pooler (pgbouncer), its admin
-- console sampled (SHOW POOLS) and its cumulative totals (SHOW STATS) per step, and its CPU.
-- pooler_kind NULL: direct; 'managed' or 'external'. pool_mode and pool_size: a managed one's.
ALTER TABLE steps ADD COLUMN pooler_kind TEXT;
ALTER TABLE steps ADD COLUMN pool_mode TEXT;
ALTER TABLE steps ADD COLUMN pool_size INTEGER;
-- pgbouncer's CPU, % of one core
ALTER TABLE os_samples ADD COLUMN pooler_cpu_pct REAL;

CREATE TABLE pooler_samples (
    run_id        TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id       INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    _collected_at TEXT NOT NULL,
    _phase        TEXT NOT NULL,
    epoch         REAL NOT NULL,
    cl_active     INTEGER NOT NULL,   -- SHOW POOLS, the step's database, all users summed
    cl_waiting    INTEGER NOT NULL,
    sv_active     INTEGER NOT NULL,
    sv_idle       INTEGER NOT NULL,
    sv_used       INTEGER NOT NULL,
    sv_login      INTEGER NOT NULL,
    maxwait_us    INTEGER NOT NULL,   -- the longest current wait (maxwait s + maxwait_us)
    PRIMARY KEY (step_id, epoch)
);

-- deltas of SHOW STATS totals over the bench phase (total_xact_count, total_xact_time in
-- microseconds, ...), plus what pgknee knows about the pooler of the step (version, settings)
CREATE TABLE step_pooler (
    step_id INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (step_id, name)
);
