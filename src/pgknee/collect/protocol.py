"""The two ways pgknee collects around a step, each with one life cycle driven by one loop.

A `Collector` reads the server's counters on pgknee's statistics connection when the bench phase
begins and again when it has ended, and hands back typed records (pgknee.serverstats); it says
what it needs of the server (`needs`). `StepCollectors` holds the run's collectors and drives them
all the same way, so adding one touches its own module, its query files and its table only.

A `StepSampler` samples all through a step on its own (a thread on its own schedule, or reads at
the phase changes): it is told the step, each phase as it starts, and asked for the step's typed
record at its end. `Samplers` holds the run's samplers (pg_stat_activity, this machine's and the
server's OS, pg_wait_sampling's profile) and a step's own (its pooler's console) while the step
runs, and drives them in order; they end in the reverse order, as an ExitStack closes.

A collector that cannot run on this server is left out with its reason, which the run's
environment records (`collect.NAME`); one whose first read fails is left out the same way. A read
that fails later costs that step its record, not the step."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import psycopg

from pgknee.errors import PgkneeError, first_line
from pgknee.serverstats import Collected


@dataclass(frozen=True)
class Needs:
    """What a collector needs of the server: a version (server_version_num) at least, and why."""

    since: int = 0
    lacking: str = ""  # what a server older than `since` lacks, for the note


class Collector(Protocol):
    """A source of a step's server-side records."""

    name: str
    needs: Needs

    @property
    def queries_run(self) -> int:
        """Its statements so far, each a commit in the benchmark database."""

    def available(self, conn: psycopg.Connection[Any]) -> str | None:
        """None when this server and role can serve it (an extension installed, say), else why not."""

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        """Read the counters as the bench phase begins."""

    def end(self, conn: psycopg.Connection[Any]) -> tuple[Collected, ...]:
        """Read them again once the phase has ended and its statistics settled: the phase's records
        (none when the begin read failed)."""


class StepCollectors:
    """The run's collectors: those the server can serve, driven in order on pgknee's statistics
    connection. `reads` counts the statements they ran (each a commit in the benchmark database,
    which the check of commits against transactions takes out)."""

    def __init__(self, candidates: Sequence[Collector], version_num: int) -> None:
        self.candidates = list(candidates)
        self.active: list[Collector] = []
        self.notes: dict[str, str] = {}
        self._ended = 0  # how many of the active ones ended this step (an end tried again goes on from there)
        self._records: list[Collected] = []
        for c in candidates:
            if version_num < c.needs.since:
                self.notes[c.name] = f"off: PostgreSQL {version_num // 10000} {c.needs.lacking}"
            else:
                self.active.append(c)
                self.notes[c.name] = "on"

    def check(self, conn: psycopg.Connection[Any]) -> None:
        """One trial read of each: a collector this role or server cannot read is left out, with why."""
        for c in list(self.active):
            try:
                if (why := c.available(conn)) is not None:
                    self.active.remove(c)
                    self.notes[c.name] = f"off: {why}"
                    continue
                c.begin(conn)
                c.end(conn)
            except psycopg.Error as e:
                self.active.remove(c)
                self.notes[c.name] = f"off: {first_line(e)}"

    @property
    def reads(self) -> int:
        return sum(c.queries_run for c in self.candidates)

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        self._ended, self._records = 0, []
        for c in self.active:
            try:
                c.begin(conn)
            except psycopg.OperationalError:
                raise  # the connection is gone: the step finds out about the server
            except psycopg.Error:
                continue  # its end then returns nothing for this step

    def end(self, conn: psycopg.Connection[Any]) -> tuple[Collected, ...]:
        """Each one's records, in order. When the connection is lost (OperationalError), the caller
        may call again on a new one: the collectors that ended keep their records, the one that
        failed reads again (it keeps its begin read until its end read worked)."""
        while self._ended < len(self.active):
            c = self.active[self._ended]
            try:
                self._records += c.end(conn)
            except psycopg.OperationalError:
                raise
            except psycopg.Error:
                pass
            self._ended += 1
        records, self._ended, self._records = tuple(self._records), 0, []
        return records


R = TypeVar("R")


class StepSampler(Protocol):
    """A source of samples all through a step (pre, warmup, bench, post)."""

    @property
    def name(self) -> str:
        """What it samples, for its thread and the run's notes."""

    @property
    def queries_run(self) -> int:
        """Its statements in the benchmark database so far, each a commit there (0 if none)."""

    def begin_step(self, step_id: int) -> None:
        """Keep this step's samples from now (its 'pre' phase)."""

    def set_phase(self, phase: str) -> None:
        """The step's next phase has begun: 'warmup', 'bench' or 'post'."""

    def end_step(self) -> object | None:
        """The step's typed record (None when it has nothing for this step); sampling stops until
        the next begin_step."""

    def reconnect(self) -> None:
        """The server restarted between steps: its sessions are gone."""

    def close(self) -> None:
        """Stop for good (idempotent)."""


@dataclass(frozen=True)
class StepSamples:
    """What the samplers handed back at a step's end, each by its record's type."""

    records: tuple[object, ...]

    def of(self, kind: type[R]) -> R | None:
        return next((r for r in self.records if isinstance(r, kind)), None)


class Samplers:
    """The run's samplers and the step's own, driven in order by one loop each."""

    def __init__(self) -> None:
        self.all: list[StepSampler] = []

    def add(self, sampler: StepSampler) -> None:
        self.all.append(sampler)

    @contextlib.contextmanager
    def joined(self, sampler: StepSampler, step_id: int) -> Iterator[StepSampler]:
        """A step's own sampler (started and stopped by what it samples: pooler.lab), driven with
        the run's until it leaves or the step ends."""
        sampler.begin_step(step_id)
        self.all.append(sampler)
        try:
            yield sampler
        finally:
            if sampler in self.all:
                self.all.remove(sampler)

    def leave(self, sampler: StepSampler) -> object | None:
        """A step's own sampler ends before the step does (its pooler is released): its record."""
        if sampler not in self.all:
            return None
        self.all.remove(sampler)
        return sampler.end_step()

    @property
    def queries_run(self) -> int:
        return sum(s.queries_run for s in self.all)

    def begin_step(self, step_id: int) -> None:
        for s in self.all:
            s.begin_step(step_id)

    def set_phase(self, phase: str) -> None:
        for s in self.all:
            s.set_phase(phase)

    def end_step(self) -> StepSamples:
        return StepSamples(tuple(r for s in reversed(self.all) if (r := s.end_step()) is not None))

    def reconnect(self) -> None:
        """Each one's sessions made again; the first failure raised once all have tried."""
        failed: BaseException | None = None
        for s in self.all:
            try:
                s.reconnect()
            except (psycopg.Error, PgkneeError) as e:
                failed = failed or e
        if failed is not None:
            raise failed
