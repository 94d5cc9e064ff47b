-- pgknee collector database, format 1.
CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY,
    created_at    TEXT NOT NULL,
    finished_at   TEXT,
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
    status_reason TEXT,
    workload      TEXT NOT NULL,
    target_kind   TEXT NOT NULL,
    target_label  TEXT NOT NULL,      -- user@host:port/db, never a password
    plan_json     TEXT NOT NULL,      -- the validated plan, DSN without secrets
    steps_planned INTEGER NOT NULL
);

-- environment and settings: server version and settings, CPU count, memory,
-- pgbench version, workload meta, checks after the run
CREATE TABLE run_environment (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);

-- the exact command lines pgknee ran (no secrets: connection details travel in
-- the environment and a passfile)
CREATE TABLE run_commands (
    id        INTEGER PRIMARY KEY,
    run_id    TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id   INTEGER,
    purpose   TEXT NOT NULL,
    argv_json TEXT NOT NULL
);

CREATE TABLE steps (
    step_id        INTEGER PRIMARY KEY,
    run_id         TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    variant        TEXT NOT NULL,
    clients        INTEGER NOT NULL,
    rep            INTEGER NOT NULL,
    threads        INTEGER NOT NULL,
    protocol       TEXT NOT NULL,
    duration_s     REAL NOT NULL,
    warmup_s       REAL NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
    status_reason  TEXT,
    started_at     TEXT NOT NULL,
    bench_start    REAL,               -- epoch seconds: pgbench launched
    bench_end      REAL,               -- epoch seconds: pgbench exited
    pgbench_exit   INTEGER,
    -- measured from the transaction log
    transactions   INTEGER,
    failed         INTEGER,
    retried        INTEGER,
    retries        INTEGER,
    tps            REAL,
    lat_avg_ms     REAL,
    lat_stddev_ms  REAL,
    lat_min_ms     REAL,
    lat_p50_ms     REAL,
    lat_p95_ms     REAL,
    lat_p99_ms     REAL,
    lat_max_ms     REAL,
    -- as pgbench printed it (for the checks)
    tps_pgbench    REAL,
    lat_avg_pgbench_ms REAL,
    conn_time_ms   REAL,
    -- from pg_stat_database: commits attributed to the step, per second
    tps_db         REAL,
    UNIQUE (run_id, seq)
);
CREATE INDEX steps_run ON steps (run_id, clients, rep);

CREATE TABLE step_scripts (
    step_id       INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    script_no     INTEGER NOT NULL,
    script        TEXT NOT NULL,
    weight        INTEGER NOT NULL,
    transactions  INTEGER NOT NULL,
    failed        INTEGER NOT NULL,
    retried       INTEGER NOT NULL,
    tps           REAL,
    lat_avg_ms    REAL,
    lat_stddev_ms REAL,
    lat_p50_ms    REAL,
    lat_p95_ms    REAL,
    lat_p99_ms    REAL,
    lat_max_ms    REAL,
    PRIMARY KEY (step_id, script_no)
);

-- failures by kind (serialization, deadlock, other)
CREATE TABLE step_failures (
    step_id INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    kind    TEXT NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (step_id, kind)
);

-- pgbench's own -P 1 progress lines: TPS over time within a step
CREATE TABLE step_progress (
    step_id   INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    t_s       REAL NOT NULL,
    tps       REAL NOT NULL,
    lat_ms    REAL,
    stddev_ms REAL,
    failed    INTEGER,
    PRIMARY KEY (step_id, t_s)
);

-- deltas of pg_stat_database for the benchmark database over the step
CREATE TABLE step_pg_stat_database (
    step_id INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    delta   REAL NOT NULL,
    PRIMARY KEY (step_id, name)
);

-- one row per pg_stat_activity snapshot, empty ones included: the denominator of AAS
CREATE TABLE snapshots (
    run_id         TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id        INTEGER NOT NULL,
    _collected_at  TEXT NOT NULL,
    _phase         TEXT NOT NULL,
    epoch          REAL NOT NULL,
    backends       INTEGER NOT NULL,
    client_backends INTEGER NOT NULL,
    active         INTEGER NOT NULL,
    idle_in_xact   INTEGER NOT NULL,
    query_ms       REAL NOT NULL,     -- what the snapshot itself cost
    PRIMARY KEY (step_id, _collected_at)
);

-- the article's table (000, section 7), same field names; only non-idle sessions
-- are stored (idle ones are counted in `snapshots`)
CREATE TABLE snap_pg_stat_activity (
    _id              INTEGER PRIMARY KEY,
    _run_id          TEXT NOT NULL,
    _step_id         INTEGER NOT NULL,
    _collected_at    TEXT NOT NULL,
    _phase           TEXT NOT NULL,
    pid              INTEGER,
    leader_pid       INTEGER,
    datid            INTEGER,
    datname          TEXT,
    usesysid         INTEGER,
    usename          TEXT,
    application_name TEXT,
    client_addr      TEXT,
    client_hostname  TEXT,
    client_port      INTEGER,
    backend_start    TEXT,
    xact_start       TEXT,
    query_start      TEXT,
    state_change     TEXT,
    wait_event_type  TEXT,
    wait_event       TEXT,
    state            TEXT,
    backend_xid      TEXT,
    backend_xmin     TEXT,
    query_id         INTEGER,
    query            TEXT,
    backend_type     TEXT
);
CREATE INDEX snap_pg_stat_activity_step ON snap_pg_stat_activity (_step_id, _phase);
CREATE INDEX snap_pg_stat_activity_run ON snap_pg_stat_activity (_run_id, _phase);

-- OS samples, once a second: the client machine (and the server, when local)
CREATE TABLE os_samples (
    run_id           TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id          INTEGER NOT NULL,
    _collected_at    TEXT NOT NULL,
    _phase           TEXT NOT NULL,
    epoch            REAL NOT NULL,
    cpu_user         REAL,
    cpu_nice         REAL,
    cpu_system       REAL,
    cpu_iowait       REAL,
    cpu_irq          REAL,
    cpu_steal        REAL,
    cpu_idle         REAL,
    load1            REAL,
    ctx_per_s        REAL,
    procs_running    INTEGER,
    procs_blocked    INTEGER,
    mem_total_kb     INTEGER,
    mem_available_kb INTEGER,
    mem_free_kb      INTEGER,
    cached_kb        INTEGER,
    client_cpu_pct   REAL,   -- pgbench's own CPU, % of one core
    PRIMARY KEY (step_id, epoch)
);
