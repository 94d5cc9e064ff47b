"""pg_stat_database for the benchmark database: snapshots and deltas. Columns
that a server version lacks (active_time before 14, ...) are simply absent."""

from __future__ import annotations

import time
from typing import Any

import psycopg

# the counters worth a delta; whichever of them the server has
COUNTERS = (
    "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched", "tup_inserted",
    "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks", "blk_read_time",
    "blk_write_time", "session_time", "active_time", "idle_in_transaction_time", "sessions",
    "sessions_abandoned", "sessions_fatal", "sessions_killed",
)


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, float]:
    """Counters now (the connection is in autocommit, so the stats snapshot is fresh)."""
    cur = conn.execute("SELECT * FROM pg_stat_database WHERE datname = current_database()")
    row = cur.fetchone()
    if row is None or cur.description is None:
        return {}
    names = [d.name for d in cur.description]
    return {k: float(v) for k, v in zip(names, row, strict=True) if k in COUNTERS and v is not None}


def settled_snapshot(conn: psycopg.Connection[Any], *, timeout: float = 3.0) -> dict[str, float]:
    """Backends flush their counters about once a second and at exit: read until two
    reads 250 ms apart agree on the commit count (or the timeout passes)."""
    deadline = time.monotonic() + timeout
    prev = snapshot(conn)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        cur = snapshot(conn)
        # our own read is a commit too: allow for it
        if abs(cur.get("xact_commit", 0) - prev.get("xact_commit", 0)) <= 1 and \
                cur.get("active_time", 0) == prev.get("active_time", 0):
            return cur
        prev = cur
    return prev


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after if k in before}
