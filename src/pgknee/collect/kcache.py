"""pg_stat_kcache, when the extension is installed in the benchmark's database, through the
collector protocol (collect.protocol): the CPU time (user, system) and the bytes read and written
by the queries of the database, from the kernel's own accounting (getrusage), read as the bench
phase begins and once it has ended. A server figure that needs no access to its /proc; off, with
why, where the extension is absent or this role may not read it."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from pgknee.collect import queries
from pgknee.collect.counters import BenchCounters
from pgknee.collect.protocol import Session
from pgknee.model.kinds import StepRecord
from pgknee.model.server import KcacheStep

# every column by name: versions name them differently (user_time; exec_user_time and plan_user_time)
_USER = ("user_time", "exec_user_time", "plan_user_time")
_SYSTEM = ("system_time", "exec_system_time", "plan_system_time")
_READS = ("reads", "exec_reads", "plan_reads")
_WRITES = ("writes", "exec_writes", "plan_writes")


def find(conn: psycopg.Connection[Any]) -> tuple[str, str] | None:
    """(its version, its schema) when installed and readable."""
    try:
        row = conn.execute(queries.text("kcache_present")).fetchone()
    except psycopg.Error:
        return None
    return (str(row[0]), str(row[1])) if row else None


def totals(conn: psycopg.Connection[Any], schema: str) -> KcacheStep:
    """The database's totals now (seconds, bytes)."""
    row = conn.execute(sql.SQL(queries.text("kcache_totals")).format(sql.Identifier(schema))).fetchone()
    cols = json.loads(row[0]) if row and row[0] else {}

    def total(names: tuple[str, ...]) -> float:
        return sum(float(cols.get(n) or 0.0) for n in names)

    return KcacheStep(user_s=total(_USER), system_s=total(_SYSTEM), read_bytes=total(_READS),
                      write_bytes=total(_WRITES))


class KcacheCollector(BenchCounters[KcacheStep]):
    """The database's queries' CPU and I/O over the bench phase."""

    name = "pg_stat_kcache"

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.schema: str | None = None
        self.version: str | None = None  # the extension's, for the run's environment

    def available(self) -> str | None:
        found = find(self.session.conn)
        if found is None:
            return "not installed in the benchmark's database, or not readable by this role"
        self.version, self.schema = found
        return super().available()

    def read(self, conn: psycopg.Connection[Any]) -> KcacheStep:
        assert self.schema is not None
        self.queries_run += 1
        return totals(conn, self.schema)

    def difference(self, before: KcacheStep, after: KcacheStep) -> tuple[StepRecord, ...]:
        return (KcacheStep(*(max(0.0, a - b) for a, b in zip(
            (after.user_s, after.system_s, after.read_bytes, after.write_bytes),
            (before.user_s, before.system_s, before.read_bytes, before.write_bytes), strict=True))),)
