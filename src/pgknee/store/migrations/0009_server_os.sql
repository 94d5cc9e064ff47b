-- pgknee collector database, format 9: the server's OS, sampled from its own /proc (through
-- pg_read_file, or over ssh) when it is not this machine: collect/serveros.py. CPU in % of all
-- the server's CPUs; rates per second. The server's machine itself (CPUs, memory, where each
-- came from, a managed service) is in run_environment (server.machine.*, server.managed*).
CREATE TABLE server_os_samples (
    run_id           TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step_id          INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    _collected_at    TEXT NOT NULL,
    _phase           TEXT NOT NULL,
    epoch            REAL NOT NULL,
    cpu_user         REAL NOT NULL,
    cpu_nice         REAL NOT NULL,
    cpu_system       REAL NOT NULL,
    cpu_iowait       REAL NOT NULL,
    cpu_irq          REAL NOT NULL,   -- irq + softirq
    cpu_steal        REAL NOT NULL,
    cpu_idle         REAL NOT NULL,
    load1            REAL,
    ctx_per_s        REAL NOT NULL,
    procs_running    INTEGER NOT NULL,  -- the run queue
    procs_blocked    INTEGER NOT NULL,
    mem_total_kb     INTEGER,
    mem_available_kb INTEGER,
    disk_read_bps    REAL NOT NULL,   -- whole disks, bytes/s
    disk_write_bps   REAL NOT NULL,
    net_rx_bps       REAL NOT NULL,   -- every interface but loopback, bytes/s
    net_tx_bps       REAL NOT NULL,
    PRIMARY KEY (step_id, epoch)
);
