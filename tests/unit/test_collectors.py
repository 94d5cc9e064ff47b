"""collect.protocol's Collectors: one loop drives every collector of a step through its moments,
in order, and ends them in reverse (the wait profile needs pg_stat_activity's benchmark backends
before that sampler ends); one the server cannot serve is left out with why; a lost statistics
session is retried on the collectors it cost and no other; a step's own collector joins and
leaves; a reconnect tries every collector; each is started as it is taken and stopped as the
collectors close, the last first, in the place it declares whatever the order it was added in."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
import pytest

from pgknee.base.errors import TargetError
from pgknee.collect.protocol import (
    COUNTERS,
    PROFILE,
    SAMPLERS,
    STEP_OWN,
    Collectors,
    Hooks,
    Needs,
    Phase,
    StepProcesses,
)
from pgknee.model.kinds import StepRecord
from pgknee.model.samples import OsSamples, PoolerSamples
from pgknee.model.server import WalStep


@dataclass
class Fake(Hooks):
    name: str
    calls: list[str]
    queries_run: int = 0
    fail_reconnect: bool = False
    records: tuple[StepRecord, ...] = ()
    phases: list[str] = field(default_factory=list)
    needs: Needs = field(default_factory=Needs)
    why_not: str | None = None
    lose_session: int = 0  # its next reads that find the statistics session lost
    order: int = COUNTERS
    lifecycle: list[str] = field(default_factory=list)  # its starts and closes

    def available(self) -> str | None:
        return self.why_not

    def start(self) -> None:
        self.lifecycle.append("start")
        self.calls.append(f"{self.name}.start")

    def close(self) -> None:
        self.lifecycle.append("close")
        self.calls.append(f"{self.name}.close")

    def begin_step(self, step: StepProcesses) -> None:
        self.calls.append(f"{self.name}.begin {step.step_id}")

    def set_phase(self, phase: Phase) -> None:
        self._read(phase)

    def settled(self) -> None:
        self._read("settled")

    def _read(self, moment: str) -> None:
        if self.lose_session:
            self.lose_session -= 1
            raise psycopg.OperationalError("terminating connection due to administrator command")
        self.phases.append(moment)
        self.queries_run += 1

    def end_step(self) -> tuple[StepRecord, ...]:
        self.calls.append(f"{self.name}.end")
        return self.records

    def reconnect(self) -> None:
        self.calls.append(f"{self.name}.reconnect")
        if self.fail_reconnect:
            raise TargetError(f"{self.name} cannot reconnect")


WAL = WalStep(1, 0, 1.0, 0, None, None, None, None)


def test_driven_in_order_and_ended_in_reverse() -> None:
    calls: list[str] = []
    a, b = Fake("activity", calls, queries_run=5), Fake("waits", calls, queries_run=2, records=(OsSamples(((1,),)),))
    collectors = Collectors(170000)
    assert collectors.add(a) and collectors.add(b)
    collectors.begin_step(StepProcesses(7))
    for phase in ("warmup", "bench", "post"):
        collectors.set_phase(phase)  # type: ignore[arg-type]
    collectors.settled()
    ends = collectors.end_step()
    assert calls == ["activity.start", "waits.start", "activity.begin 7", "waits.begin 7", "waits.end", "activity.end"]
    assert a.phases == b.phases == ["warmup", "bench", "post", "settled"]
    assert collectors.queries_run == 7 + 8  # each read a statement
    assert ends == (OsSamples(((1,),)),)  # a collector with nothing for the step gives no record


def test_one_the_server_cannot_serve_is_left_out_with_why() -> None:
    collectors = Collectors(150000)
    old = Fake("pg_stat_io", [], needs=Needs(since=160000, lacking="has no pg_stat_io (16+)"))
    absent = Fake("pg_stat_kcache", [], why_not="not installed in the benchmark's database")
    assert not collectors.add(old) and not collectors.add(absent) and collectors.add(Fake("pg_stat_wal", []))
    assert collectors.notes == {"pg_stat_io": "off: PostgreSQL 15 has no pg_stat_io (16+)",
                                "pg_stat_kcache": "off: not installed in the benchmark's database",
                                "pg_stat_wal": "on"}
    assert [c.name for c in collectors.all] == ["pg_stat_wal"]


def test_a_lost_session_costs_no_other_collector_its_moment_and_is_retried_on_the_one_it_cost() -> None:
    calls: list[str] = []
    database, wal = Fake("pg_stat_database", calls), Fake("pg_stat_wal", calls, lose_session=1, records=(WAL,))
    activity = Fake("activity", calls)
    collectors = Collectors(170000)
    for c in (database, wal, activity):
        collectors.add(c)
    collectors.begin_step(StepProcesses(1))
    with pytest.raises(psycopg.OperationalError, match="pg_stat_wal"):
        collectors.set_phase("bench")
    assert activity.phases == ["bench"]  # the samplers after it were told all the same
    collectors.set_phase("bench")  # again, on a new session: only the one that failed reads
    assert database.phases == wal.phases == activity.phases == ["bench"]
    assert collectors.end_step() == (WAL,)


def test_a_read_error_other_than_a_lost_session_costs_that_collector_only() -> None:
    class Denied(Fake):
        def settled(self) -> None:
            raise psycopg.errors.InsufficientPrivilege("permission denied for function pg_stat_get_io")

    collectors = Collectors(170000)
    denied, wal = Denied("pg_stat_io", []), Fake("pg_stat_wal", [])
    collectors.add(denied)
    collectors.add(wal)
    collectors.settled()
    assert wal.phases == ["settled"]


def test_a_steps_own_collector_joins_for_the_step_and_leaves_with_its_record() -> None:
    calls: list[str] = []
    run_long = Fake("os", calls)
    own = Fake("pooler", calls, records=(PoolerSamples(((1, 2),), ("gone",)),), queries_run=3)
    collectors = Collectors(170000)
    collectors.add(run_long)
    with collectors.joined(own, StepProcesses(3)):
        collectors.set_phase("bench")
        assert collectors.leave(own) == (PoolerSamples(((1, 2),), ("gone",)),)
        assert collectors.leave(own) == ()  # it left already
        collectors.set_phase("post")
        assert collectors.queries_run == 2 + 4  # one that left still counts for the step
    assert own.phases == ["bench"] and run_long.phases == ["bench", "post"]
    assert collectors.all == [run_long]
    # started as it joins, stopped as the step ends (before its pooler does); the run's own are not
    assert [c for c in calls if c.startswith("pooler.")] == ["pooler.start", "pooler.begin 3", "pooler.end",
                                                            "pooler.close"]
    assert run_long.lifecycle == ["start"]


def test_a_joined_collector_leaves_when_the_step_fails() -> None:
    collectors, own = Collectors(170000), Fake("pooler", [])
    with pytest.raises(RuntimeError), collectors.joined(own, StepProcesses(1)):
        raise RuntimeError("the step failed")
    assert collectors.all == [] and own.lifecycle == ["start", "close"]


def test_reconnect_tries_every_collector_and_raises_the_first_failure() -> None:
    calls: list[str] = []
    collectors = Collectors(170000)
    for name, fail in (("activity", True), ("os", False), ("waits", True)):
        collectors.add(Fake(name, calls, fail_reconnect=fail))
    with pytest.raises(TargetError, match="activity cannot reconnect"):
        collectors.reconnect()
    assert calls[3:] == ["activity.reconnect", "os.reconnect", "waits.reconnect"]


def test_each_takes_its_declared_place_is_started_when_taken_and_all_stop_the_last_first() -> None:
    """The waits' profile is taken first (its sessions open before the server's connections are
    counted) yet ends before pg_stat_activity's sampler, which finds the benchmark's backends for
    it; one left out is never started, and says why; a flag's collector is left out by name."""
    calls: list[str] = []
    waits = Fake("waits", calls, order=PROFILE)
    absent = Fake("pg_stat_kcache", calls, why_not="not installed")
    activity, wal, pooler = Fake("activity", calls, order=SAMPLERS), Fake("pg_stat_wal", calls), \
        Fake("pooler", calls, order=STEP_OWN)
    collectors = Collectors(170000)
    for c in (waits, absent, activity, wal):
        collectors.add(c)
    collectors.leave_out("server_os", "--os-interval 0")
    assert [c.name for c in collectors.all] == ["pg_stat_wal", "activity", "waits"]
    assert absent.lifecycle == [] and collectors.notes["server_os"] == "off: --os-interval 0"
    with collectors.joined(pooler, StepProcesses(1)):
        assert [c.name for c in collectors.all] == ["pg_stat_wal", "activity", "waits", "pooler"]
        collectors.end_step()
    collectors.close()
    assert calls == ["waits.start", "activity.start", "pg_stat_wal.start", "pooler.start", "pooler.begin 1",
                     "pooler.end", "waits.end", "activity.end", "pg_stat_wal.end", "pooler.close",
                     "waits.close", "activity.close", "pg_stat_wal.close"]


def test_a_sampler_watches_the_processes_the_step_hands_it() -> None:
    """This machine's sampler reads pgbench's and the pooler's CPU from the step's processes as the
    step fills them in (here this test's own process, busy for a moment)."""
    import os
    import time

    from pgknee.collect.osproc import OsSampler

    s, step = OsSampler(0.05), StepProcesses(4)
    collectors = Collectors(170000)
    collectors.add(s)
    try:
        collectors.begin_step(step)
        step.client, step.pooler = os.getpid(), (os.getpid(),)
        until = time.monotonic() + 0.6
        while time.monotonic() < until:
            sum(i * i for i in range(1000))
        (record,) = collectors.end_step()
    finally:
        collectors.close()
    rows = record.rows  # type: ignore[attr-defined]
    busy = [r for r in rows if r.client_cpu_pct is not None and r.pooler_cpu_pct is not None]
    # busy here, even sharing 2 cores with 3 other test processes
    assert len(busy) >= 2 and max(r.client_cpu_pct for r in busy) > 20, rows
