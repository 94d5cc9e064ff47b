-- pgknee collector database, format 17: several pgbouncer processes on one port (processes=N,
-- so_reuseport). A step records how many it ran (each had its own pool of pool_size + pool_reserve
-- server connections), and each process's own view every sample: its CPU (user and system, % of
-- one core, from /proc), the time it waited for a CPU (runnable, /proc/PID/schedstat) and its
-- SHOW POOLS counts. pooler_samples keeps the processes' counts
-- summed, so that it reads as one pooler; before format 17 a step had one process.
ALTER TABLE steps ADD COLUMN pool_processes INTEGER NOT NULL DEFAULT 1;
CREATE TABLE pooler_process_samples (
    run_id         TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id        INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    _collected_at  TEXT NOT NULL,
    _phase         TEXT NOT NULL,
    epoch          REAL NOT NULL,
    process        INTEGER NOT NULL,  -- 1..N, as pgknee started them
    pid            INTEGER,           -- NULL: a pooler pgknee did not start
    cpu_user_pct   REAL,              -- since the previous sample, % of one core; NULL at the first
    cpu_system_pct REAL,
    runq_wait_pct  REAL,              -- % of the time since the previous sample it waited for a CPU
    cl_active      INTEGER,           -- NULL: its console did not answer this time
    cl_waiting     INTEGER,
    sv_active      INTEGER,
    sv_idle        INTEGER,
    PRIMARY KEY (step_id, process, epoch)
);
