"""One way to collect around a step: every collector has the same life cycle, and one loop
(`Collectors`) drives them all.

A step goes through its phases, and each collector is told of every one: `begin_step` (the 'pre'
phase, with the step's `StepProcesses`: the processes some collectors watch, filled in as the step
starts them), `set_phase('warmup')`, `set_phase('bench')`, `set_phase('post')`, `settled()` (the bench
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
reason, which the run's environment records (`collect.NAME`); one taken is started (`start()`:
its thread, its sessions) and stopped when the collectors close (`close()`), the last first. A
read that fails later costs that step its record, not the step. Each declares its place among
the others (`order`), whatever the order they are added in: the statement mix first, the server's
counters, the samplers, the waits' profile, a step's pooler last. They end in the reverse order
(the waits' profile still has the benchmark's backends from pg_stat_activity's sampler before that
one ends). A step's own collector (its pooler's console) joins for the step (`joined`: started
then, stopped as it leaves) and may leave early with its records (`leave`).

Adding a collector touches its own module, its query files, its record and its table."""

from __future__ import annotations

import bisect
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


@dataclass
class StepProcesses:
    """A step's processes, handed to every collector at `begin_step` and filled in as the step
    starts them: pgbench (the warm-up's, then the bench's; None between them), a managed pooler's
    processes, and the benchmark's server backends as pg_stat_activity's sampler finds them. Read
    from the samplers' threads: each field is replaced whole, never changed in place."""

    step_id: int
    client: int | None = None
    pooler: tuple[int, ...] = ()
    backends: frozenset[int] = frozenset()


# each collector's place (`order`): the statement mix reads before pg_stat_database and after it,
# the counters, then the samplers; the waits' profile ends before pg_stat_activity's sampler
FIRST, COUNTERS, SAMPLERS, PROFILE, STEP_OWN = 0, 10, 20, 90, 100


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
    def order(self) -> int:
        """Its place among the run's collectors (FIRST ... STEP_OWN)."""

    @property
    def queries_run(self) -> int:
        """Its statements in the benchmark database so far, each a commit there (0 if none)."""

    def available(self) -> str | None:
        """None when this server, role and machine can serve it now, else why not."""

    def start(self) -> None:
        """Taken: start what it runs on (its thread, its sessions)."""

    def begin_step(self, step: StepProcesses) -> None:
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
    order = COUNTERS

    def available(self) -> str | None:
        return None

    def start(self) -> None:
        return None

    def begin_step(self, step: StepProcesses) -> None:
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
        works), and start it, in its place; else leave it out with why. True when taken."""
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
        c.start()
        self.notes[c.name] = "on"
        self._place(c)
        return True

    def leave_out(self, name: str, why: str) -> None:
        """A collector the run was asked to go without (a flag): why, for the run's environment."""
        self.notes[name] = f"off: {why}"

    def _place(self, c: Collector) -> None:
        self.all.insert(bisect.bisect_right([x.order for x in self.all], c.order), c)

    @contextlib.contextmanager
    def joined(self, collector: Collector, step: StepProcesses) -> Iterator[Collector]:
        """A step's own collector (its pooler's console, made by what it collects: pooler.lab),
        started and driven with the run's from now until it leaves or the step ends; stopped then."""
        collector.start()
        try:
            collector.begin_step(step)
            self._place(collector)
            yield collector
        finally:
            if collector in self.all:
                self.all.remove(collector)
                self._done.append(collector)
            collector.close()

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

    def begin_step(self, step: StepProcesses) -> None:
        self._done = []
        self._each("begin", lambda c: c.begin_step(step))

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

    def close(self) -> None:
        """Every collector stopped, the last first (each close is idempotent); the first failure
        raised once all have been told."""
        failed: BaseException | None = None
        for c in reversed(self.all):
            try:
                c.close()
            except (psycopg.Error, PgkneeError, OSError) as e:  # the others still stop
                failed = failed or e
        if failed is not None:
            raise failed
