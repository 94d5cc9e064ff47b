-- Load generators on other hosts (pgknee agent) and the coordinator that drives them
-- (pgknee run --agents N), meeting in the store: the agents that registered, the work given to
-- each for a step (its share of the clients, a common start time) with what it measured, and
-- each agent's share of a completed step as the report shows it. Times are epoch seconds on the
-- store's clock (each agent's offset to it measured and kept).
CREATE TABLE agents (
    name            TEXT PRIMARY KEY,
    host            TEXT NOT NULL,
    pid             INTEGER NOT NULL,
    cpus            INTEGER NOT NULL,
    pgbench         TEXT NOT NULL,      -- its version text
    pgbench_version INTEGER NOT NULL,
    rtt_ms          REAL,               -- its own round trip to the server, when it knows the server
    clock_offset_ms REAL NOT NULL,      -- the store's clock minus its own
    clock_error_ms  REAL NOT NULL,      -- half the round trip of that measurement
    registered_at   REAL NOT NULL,
    heartbeat_at    REAL NOT NULL,
    run_id          TEXT,               -- the run it serves, once a coordinator took it
    state           TEXT NOT NULL CHECK (state IN ('waiting', 'taken', 'done', 'gone'))
);
CREATE TABLE agent_tasks (
    task_id     INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id     INTEGER NOT NULL,
    agent       TEXT NOT NULL,
    phase       TEXT NOT NULL,          -- warmup | bench
    spec_json   TEXT NOT NULL,          -- its pgbench run: clients, threads, scripts' texts, options (no secret)
    state       TEXT NOT NULL CHECK (state IN ('assigned', 'ready', 'running', 'done', 'failed', 'cancelled')),
    start_at    REAL,                   -- the common start, on the store's clock
    progress_json TEXT,                 -- pgbench's progress lines so far, while it runs (the live display)
    result_json TEXT,                   -- its counts, histograms (HdrHistogram V2, base64), CPU, times
    reason      TEXT,
    updated_at  REAL NOT NULL
);
CREATE INDEX agent_tasks_agent ON agent_tasks (agent, state);
CREATE TABLE step_agents (
    run_id          TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id         INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    agent           TEXT NOT NULL,
    host            TEXT NOT NULL,
    clients         INTEGER NOT NULL,
    threads         INTEGER NOT NULL,
    cpus            INTEGER NOT NULL,
    exit_code       INTEGER NOT NULL,
    transactions    INTEGER,
    failed          INTEGER,
    tps             REAL,
    bench_start     REAL,               -- its pgbench's measured window, on the store's clock
    bench_end       REAL,
    cpu_pct         REAL,               -- its pgbench's CPU, % of one core
    rtt_ms          REAL,
    clock_offset_ms REAL,
    lat_p50_ms      REAL,               -- its own, for its share (the step's come from the merged histogram)
    lat_p99_ms      REAL,
    PRIMARY KEY (step_id, agent)
);
