"""pg_stat_database for the benchmark database: snapshots and deltas. Columns
that a server version lacks (active_time before 14, ...) are simply absent."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.clock import polling
from pgknee.collect import queries

# the counters worth a delta; whichever of them the server has
COUNTERS = (
    "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched", "tup_inserted",
    "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks", "blk_read_time",
    "blk_write_time", "session_time", "active_time", "idle_in_transaction_time", "sessions",
    "sessions_abandoned", "sessions_fatal", "sessions_killed",
)


SERVER_START = "postmaster_start"  # not a counter: when the server started, to tell a restart


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, float]:
    """Counters now (the connection is in autocommit, so the stats snapshot is fresh), and the
    server's start time."""
    cur = conn.execute(queries.text("database_stats"))
    row = cur.fetchone()
    if row is None or cur.description is None:
        return {}
    names = [d.name for d in cur.description]
    return {k: float(v) for k, v in zip(names, row, strict=True)
            if (k in COUNTERS or k == SERVER_START) and v is not None}


def restarted(before: dict[str, float], after: dict[str, float]) -> bool:
    """The server started again between two snapshots (its counters may have been reset)."""
    return SERVER_START in before and before.get(SERVER_START) != after.get(SERVER_START)


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The counters' change; none across a restart, whose counters do not continue the old ones."""
    if restarted(before, after):
        return {}
    return {k: after[k] - before[k] for k in after if k in before and k != SERVER_START}


@dataclass(frozen=True)
class Quiet:
    waited_s: float
    backends_left: int  # pgbench backends still there when the wait ended
    checkpointing: bool  # an immediate checkpoint still running when it ended
    spread_checkpoint: bool  # a spread checkpoint running then (not waited for)


class StatsReader:
    """pg_stat_database reads on pgknee's own connection; each read is a commit in the benchmark
    database, counted so that the check of commits against transactions can take them out. The
    connection is made again once if it was lost (terminated by a DBA, a restart, a blip)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], settle_s: float) -> None:
        self.connect = connect
        self.conn = self._session()
        self.reads = 0
        self.settle_s = settle_s

    def _session(self) -> psycopg.Connection[Any]:
        conn = self.connect()
        conn.execute(queries.text("own_session"))
        return conn

    def reconnect(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self.conn.close()
        self.conn = self._session()

    def snapshot(self) -> dict[str, float]:
        self.reads += 1
        try:
            return snapshot(self.conn)
        except psycopg.OperationalError:
            self.reconnect()
            return snapshot(self.conn)

    def quiet(self, longest_s: float, shortest_s: float = 0.3, every_s: float = 0.1) -> Quiet:
        """Wait, polling, until the server is quiet: no pgbench backend left from the last step and
        no immediate checkpoint running; at least shortest_s (the 'pre' phase's samples), at most
        longest_s."""
        for waited in polling(longest_s, every_s):
            self.reads += 1
            row = self.conn.execute(queries.text("quiet")).fetchone()
            backends, checkpointing, spread = (int(row[0]), bool(row[1]), bool(row[2])) if row else (0, False, False)
            if waited >= shortest_s and backends == 0 and not checkpointing:
                break
        return Quiet(waited, backends, checkpointing, spread)

    def settled(self) -> dict[str, float]:
        """The counters once they stop moving (backends flush them as they go idle), or after
        settle_s at the most."""
        prev = self.snapshot()
        for waited in polling(self.settle_s, 0.25):
            if not waited:
                continue  # the first snapshot is prev
            cur = self.snapshot()
            if cur.get("xact_commit", 0) - prev.get("xact_commit", 0) <= 1 and \
                    cur.get("active_time") == prev.get("active_time"):
                return cur
            prev = cur
        return prev
