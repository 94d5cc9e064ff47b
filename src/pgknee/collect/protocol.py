"""One way to collect around a step: every collector has the same life cycle, and one loop
(`Collectors`) drives them all.

A step goes through its phases, and each collector is told of every one: `begin_step` (the 'pre'
phase), `set_phase('warmup')`, `set_phase('bench')`, `set_phase('post')`, `settled()` (the bench
phase's statistics have reached the server's views: backends report theirs as they go idle), and
`end_step()`, which hands back the step's typed records (pgknee.model.kinds: each knows its tables
and its way through a side file). A collector does what its source needs at these moments and
nothing at the others (`Hooks` gives each a default that does nothing):

- a sampler samples on a thread of its own between `begin_step` and `end_step`, tagging its
  samples with the phase (pg_stat_activity, this machine's OS, the server's OS, the pooler's
  console);
- a reader of the server's counters reads at `set_phase('bench')` and at `settled()`, on pgknee's
  statistics session (`Session`), and hands back the difference (pg_stat_database, which
  settles first, then pg_stat_wal, the checkpoints, pg_stat_io, pg_stat_kcache);
- pg_wait_sampling's profile reads as the bench and post phases begin;
- a pooler's console (collect.pooler) samples SHOW POOLS through the step and reads SHOW STATS as
  the bench and post phases begin, its deltas in the step's PoolerFacts;
- a captured workload's statement mix (workloads.captured.mix) reads pg_stat_statements as the
  bench phase begins and as the step ends, added first so that neither read falls in
  pg_stat_database's window.

Each says what it needs (`needs`: the server's version, and why an older one cannot serve it)
and whether this server, role and machine can serve it now (`available()`: an extension
installed, a privilege held, a trial read that worked). One that cannot is left out with its
reason, which the run's environment records (`collect.NAME`). A read that fails later costs that
step its record, not the step. Collectors end in the reverse order of the list, as an ExitStack
closes (the waits' profile still learns the benchmark's backends from pg_stat_activity's sampler
before that one ends). A step's own collector (its pooler's console) joins for the step
(`joined`) and may leave early with its records (`leave`).

Adding a collector touches its own module, its query files, its record and its table."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import psycopg

from pgknee.base.errors import Interrupted, PgkneeError, first_line
from pgknee.model.kinds import StepRecord

Phase = Literal["warmup", "bench", "post"]


@dataclass(frozen=True)
class Needs:
    """What a collector needs of the server: a version (server_version_num) at least, and why."""

    since: int = 0
    lacking: str = ""  # what a server older than `since` lacks, for the note


class Session(Protocol):
    """pgknee's statistics session (collect.pgstats.StatsReader), made again when it was lost."""

    conn: psycopg.Connection[Any]


class Collector(Protocol):
    """A source of a step's records, told of each phase of the step."""

    @property
    def name(self) -> str:
        """What it collects, for the run's notes (collect.NAME) and its thread."""

    @property
    def needs(self) -> Needs: ...

    @property
    def queries_run(self) -> int:
        """Its statements in the benchmark database so far, each a commit there (0 if none)."""

    def available(self) -> str | None:
        """None when this server, role and machine can serve it now, else why not."""

    def begin_step(self, step_id: int) -> None:
        """A step begins (its 'pre' phase)."""

    def set_phase(self, phase: Phase) -> None:
        """The step's next phase has begun."""

    def settled(self) -> None:
        """The bench phase's statistics have settled in the server's views."""

    def end_step(self) -> tuple[StepRecord, ...]:
        """The step's records (none when it has nothing for this step); idle until the next step."""

    def reconnect(self) -> None:
        """The server restarted between steps: its sessions are gone."""

    def close(self) -> None:
        """Stop for good (idempotent)."""


class Hooks:
    """A collector's defaults: needs nothing, serves any server, does nothing at any moment (its
    `name` and `queries_run` are its own)."""

    needs = Needs()

    def available(self) -> str | None:
        return None

    def begin_step(self, step_id: int) -> None:
        return None

    def set_phase(self, phase: Phase) -> None:
        return None

    def settled(self) -> None:
        return None

    def end_step(self) -> tuple[StepRecord, ...]:
        return ()

    def reconnect(self) -> None:
        return None

    def close(self) -> None:
        return None


class Collectors:
    """The run's collectors and, while a step runs, the step's own: driven in order by one loop
    per moment, ended in the reverse order.

    A collector whose statistics session was lost in a moment (psycopg.OperationalError) does not
    stop the others being told; the loop raises at its end, and called again for the same moment
    (on a new session) tells only those that failed, in order, so none is told twice. Any other
    error of a collector's read costs that collector its record for the step."""

    def __init__(self, version_num: int) -> None:
        self.version_num = version_num
        self.all: list[Collector] = []
        self.notes: dict[str, str] = {}
        self._done: list[Collector] = []  # those that left early (their queries still count)
        self._retry: tuple[str, list[Collector]] | None = None  # (moment, those whose session was lost in it)

    def add(self, collector: Collector) -> bool:
        """Take it if this server, role and machine can serve it (its first read, if it reads,
        works); else leave it out with why. True when taken."""
        c = collector
        if self.version_num < c.needs.since:
            self.notes[c.name] = f"off: PostgreSQL {self.version_num // 10000} {c.needs.lacking}"
            return False
        try:
            why = c.available()
        except psycopg.Error as e:
            why = first_line(e)
        if why is not None:
            self.notes[c.name] = f"off: {why}"
            return False
        self.notes[c.name] = "on"
        self.all.append(c)
        return True

    @contextlib.contextmanager
    def joined(self, collector: Collector, step_id: int) -> Iterator[Collector]:
        """A step's own collector (started and stopped by what it collects: pooler.lab), driven
        with the run's from now until it leaves or the step ends."""
        collector.begin_step(step_id)
        self.all.append(collector)
        try:
            yield collector
        finally:
            if collector in self.all:
                self.all.remove(collector)
                self._done.append(collector)

    def leave(self, collector: Collector) -> tuple[StepRecord, ...]:
        """A step's own collector ends before the step does (its pooler is released): its records."""
        if collector not in self.all:
            return ()
        self.all.remove(collector)
        self._done.append(collector)
        return collector.end_step()

    @property
    def queries_run(self) -> int:
        return sum(c.queries_run for c in [*self.all, *self._done])

    def _each(self, moment: str, call: Callable[[Collector], None]) -> None:
        again = self._retry is not None and self._retry[0] == moment
        todo = [c for c in self._retry[1] if c in self.all] if again and self._retry is not None else list(self.all)
        self._retry = None
        lost: list[Collector] = []
        for c in todo:
            try:
                call(c)
            except psycopg.OperationalError:
                lost.append(c)  # its session is gone: the others are still told
            except psycopg.Error:
                continue  # that one's record is lost for this step, not the step
        if lost:
            self._retry = (moment, lost)
            raise psycopg.OperationalError(f"{', '.join(c.name for c in lost)}: the statistics session was lost")

    def begin_step(self, step_id: int) -> None:
        self._done = []
        self._each("begin", lambda c: c.begin_step(step_id))

    def set_phase(self, phase: Phase) -> None:
        self._each(phase, lambda c: c.set_phase(phase))

    def settled(self) -> None:
        self._each("settled", lambda c: c.settled())

    def end_step(self) -> tuple[StepRecord, ...]:
        """Every collector's records for the step, the last one's first."""
        return tuple(r for c in reversed(self.all) for r in c.end_step())

    def reconnect(self) -> None:
        """Each one's sessions made again; the first failure raised once all have tried."""
        failed: BaseException | None = None
        for c in self.all:
            try:
                c.reconnect()
            except Interrupted:
                raise
            except (psycopg.Error, PgkneeError) as e:
                failed = failed or e
        if failed is not None:
            raise failed
