"""pg_stat_database for the benchmark database, through the collector protocol (collect.protocol):
read as the bench phase begins and again once its counters settled after it; the change is the
step's DatabaseStep (pgknee.model.server), or a ServerRestart when the server started again in
between. Columns a server version lacks (active_time before 14, ...) are simply absent. The
statistics session (StatsReader) also waits for a quiet server before each step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.base.clock import polling
from pgknee.collect import queries
from pgknee.collect.counters import BenchCounters
from pgknee.collect.protocol import Session
from pgknee.model.kinds import StepRecord
from pgknee.model.server import DATABASE_COUNTERS, DatabaseStep, ServerRestart

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
            if (k in DATABASE_COUNTERS or k == SERVER_START) and v is not None}


def settled(read: Callable[[], dict[str, float]], settle_s: float) -> dict[str, float]:
    """The counters once they stop moving (backends flush them as they go idle), or after
    settle_s at the most: `read` until two reads a quarter second apart agree."""
    prev = read()
    for waited in polling(settle_s, 0.25):
        if not waited:
            continue  # the first read is prev
        cur = read()
        if cur.get("xact_commit", 0) - prev.get("xact_commit", 0) <= 1 and \
                cur.get("active_time") == prev.get("active_time"):
            return cur
        prev = cur
    return prev


def change(before: dict[str, float], after: dict[str, float]) -> DatabaseStep | ServerRestart:
    """The counters' change; a restart when the server's start time moved (its counters do not
    continue the old ones)."""
    if SERVER_START in before and before.get(SERVER_START) != after.get(SERVER_START):
        return ServerRestart(before[SERVER_START], after.get(SERVER_START))
    return DatabaseStep(**{k: after[k] - before[k] for k in DATABASE_COUNTERS if k in after and k in before})


class DatabaseCollector(BenchCounters[dict[str, float]]):
    """pg_stat_database's change over the bench phase; each read is a statement, a commit in the
    benchmark database that the step's check of commits against transactions takes out. Its
    second read waits for the counters to settle; the other collectors of the server read after."""

    name = "pg_stat_database"

    def __init__(self, session: Session, settle_s: float) -> None:
        super().__init__(session)
        self.settle_s = settle_s

    def read(self, conn: psycopg.Connection[Any]) -> dict[str, float]:
        self.queries_run += 1
        return snapshot(conn)

    def read_after(self, conn: psycopg.Connection[Any]) -> dict[str, float]:
        return settled(lambda: self.read(conn), self.settle_s)

    def difference(self, before: dict[str, float], after: dict[str, float]) -> tuple[StepRecord, ...]:
        return (change(before, after),)


@dataclass(frozen=True)
class Quiet:
    waited_s: float
    backends_left: int  # pgbench backends still there when the wait ended
    checkpointing: bool  # an immediate checkpoint still running when it ended
    spread_checkpoint: bool  # a spread checkpoint running then (not waited for)


class StatsReader:
    """pgknee's statistics session in the benchmark database: the collectors read on it (each read
    is a commit there, counted so that the check of commits against transactions can take them
    out); it is made again when it was lost (terminated by a DBA, a restart, a blip)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self.connect = connect
        self.conn = self._session()
        self.reads = 0

    def _session(self) -> psycopg.Connection[Any]:
        conn = self.connect()
        conn.execute(queries.text("own_session"))
        return conn

    def reconnect(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self.conn.close()
        self.conn = self._session()

    def answers(self) -> None:
        """One statement on the session, made again once if it was lost; raises if the server
        does not answer."""
        self.reads += 1
        try:
            self.conn.execute(queries.text("ping"))
        except psycopg.OperationalError:
            self.reconnect()
            self.conn.execute(queries.text("ping"))

    def quiet(self, longest_s: float, shortest_s: float = 0.3, every_s: float = 0.1) -> Quiet:
        """Wait, polling, until the server is quiet: no pgbench backend left from the last step and
        no immediate checkpoint running; at least shortest_s (the 'pre' phase's samples), at most
        longest_s."""
        for waited in polling(longest_s, every_s):
            self.reads += 1
            row = queries.one_row(self.conn, "quiet")
            backends, checkpointing, spread = int(row[0]), bool(row[1]), bool(row[2])
            if waited >= shortest_s and backends == 0 and not checkpointing:
                break
        return Quiet(waited, backends, checkpointing, spread)
