"""pg_stat_database for the benchmark database: snapshots and deltas. Columns
that a server version lacks (active_time before 14, ...) are simply absent."""

from __future__ import annotations

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


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after if k in before}
