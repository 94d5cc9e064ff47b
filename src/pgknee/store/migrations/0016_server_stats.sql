-- pgknee collector database, format 16: the server's side of each step's bench phase
-- (collect/serverstats.py, collect/kcache.py, pgknee/serverstats.py): the change of pg_stat_wal, of
-- the checkpoint counters (pg_stat_bgwriter up to PostgreSQL 16, pg_stat_checkpointer from 17), of
-- pg_stat_io (16+) and of pg_stat_kcache (where installed; before format 16 its figures were step
-- facts kcache.*) between the phase's start and its end, once its statistics settled. A column the
-- server's version has not is NULL. Times in ms, sizes in bytes.
CREATE TABLE step_wal (
    step_id      INTEGER PRIMARY KEY REFERENCES steps (step_id) ON DELETE CASCADE,
    records      INTEGER NOT NULL,
    fpi          INTEGER NOT NULL,   -- full-page images
    bytes        REAL NOT NULL,
    buffers_full INTEGER NOT NULL,   -- WAL written because wal_buffers was full
    writes       INTEGER,            -- pg_stat_wal's up to 17, pg_stat_io's object 'wal' from 18
    syncs        INTEGER,
    write_ms     REAL,               -- counted with track_wal_io_timing (18: track_io_timing)
    sync_ms      REAL
);
CREATE TABLE step_checkpoints (
    step_id          INTEGER PRIMARY KEY REFERENCES steps (step_id) ON DELETE CASCADE,
    source           TEXT NOT NULL,     -- pg_stat_bgwriter or pg_stat_checkpointer
    timed            INTEGER NOT NULL,  -- before 18 a skipped timed checkpoint counts too
    requested        INTEGER NOT NULL,
    done             INTEGER,           -- 18+: the checkpoints performed
    buffers_written  INTEGER NOT NULL,
    write_ms         REAL NOT NULL,
    sync_ms          REAL NOT NULL,
    running_at_start INTEGER NOT NULL,  -- 1: the checkpointer was in a checkpoint as the phase began
    running_at_end   INTEGER NOT NULL
);
CREATE TABLE step_io (
    step_id      INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    backend_type TEXT NOT NULL,
    object       TEXT NOT NULL,
    context      TEXT NOT NULL,
    reads        INTEGER NOT NULL,
    read_ms      REAL NOT NULL,
    writes       INTEGER NOT NULL,
    write_ms     REAL NOT NULL,
    writebacks   INTEGER NOT NULL,
    extends      INTEGER NOT NULL,
    hits         INTEGER NOT NULL,
    evictions    INTEGER NOT NULL,
    reuses       INTEGER NOT NULL,
    fsyncs       INTEGER NOT NULL,
    fsync_ms     REAL NOT NULL,
    read_bytes   REAL NOT NULL,
    write_bytes  REAL NOT NULL,
    PRIMARY KEY (step_id, backend_type, object, context)
);
CREATE TABLE step_kcache (
    step_id     INTEGER PRIMARY KEY REFERENCES steps (step_id) ON DELETE CASCADE,
    user_s      REAL NOT NULL,
    system_s    REAL NOT NULL,
    read_bytes  REAL NOT NULL,
    write_bytes REAL NOT NULL
);
