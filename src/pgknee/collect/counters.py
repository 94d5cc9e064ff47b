"""The shape of a collector of the server's counters over a step's bench phase (collect.protocol):
two reads on pgknee's statistics session, as the phase begins and once its statistics settled,
and the step's records made of their difference. pg_stat_database (collect.pgstats), pg_stat_wal,
the checkpoints and pg_stat_io (collect.serverstats) and pg_stat_kcache (collect.kcache) are one."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import psycopg

from pgknee.collect.protocol import Hooks, Phase, Session, StepProcesses
from pgknee.model.kinds import StepRecord

T = TypeVar("T")


class BenchCounters(Hooks, Generic[T]):
    """A collector of the server's counters over the bench phase, on pgknee's statistics session:
    `read` as the phase begins and `read_after` once its statistics settled; the step's records
    are `difference` of the two. A lost session raises (collect.protocol's loop makes it again and
    calls once more): the first read is kept until the second worked."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.queries_run = 0
        self._before: T | None = None
        self._records: tuple[StepRecord, ...] = ()

    def read(self, conn: psycopg.Connection[Any]) -> T:
        raise NotImplementedError

    def read_after(self, conn: psycopg.Connection[Any]) -> T:
        return self.read(conn)

    def difference(self, before: T, after: T) -> tuple[StepRecord, ...]:
        raise NotImplementedError

    def available(self) -> str | None:
        self.read(self.session.conn)  # a trial: a view this role cannot read raises here
        return None

    def begin_step(self, step: StepProcesses) -> None:
        self._before, self._records = None, ()

    def set_phase(self, phase: Phase) -> None:
        if phase == "bench":
            self._before = None
            self._before = self.read(self.session.conn)

    def settled(self) -> None:
        if self._before is None:
            return  # the first read failed: no record for this step
        after = self.read_after(self.session.conn)
        before, self._before = self._before, None
        self._records = self.difference(before, after)

    def end_step(self) -> tuple[StepRecord, ...]:
        records, self._records = self._records, ()
        return records
