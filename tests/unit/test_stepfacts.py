"""pgknee.model.facts: a step's facts as typed records, stored as name/value rows and read back the
same; a figure a record lacks is not stored; no sentinel values."""

from __future__ import annotations

import pytest

from pgknee.model.facts import (
    KINDS,
    ActivityGaps,
    Agents,
    AutoDuration,
    FactsDraft,
    Faults,
    IdleSessions,
    KcacheBefore16,
    Measured,
    MemoryAtEnd,
    MemoryBeforeIdle,
    Network,
    QuietWait,
    RelayEnd,
    Settings,
    Steadiness,
    StepFacts,
    Unread,
    Warmup,
)
from pgknee.model.keys import StepFact

EVERY_KIND = StepFacts((
    QuietWait(0.42, 3, None, True), IdleSessions(500, 2.5, 498), MemoryBeforeIdle(mem_available_kb=8e6),
    MemoryAtEnd(1.0, 2.0, 3.0, 4.0, 5.0, 6, 7.0, 8), Network(4.0, 1.1, 1.5, 0.9, 0.1, 1.0),
    RelayEnd(0.2, 0.9, 37.5, None, 9), Warmup(1234, 5678.5), Measured(10.02, 0.25, 900), Steadiness(3.0, 812.5, 1.4),
    AutoDuration(True, 35.0), Agents(3, 1), Faults(True, None), Settings((("max_connections", 100.0),)),
    ActivityGaps(4, 1, 0.5, 7), KcacheBefore16(1.5, 0.25, 0.0, 8192.0),
))


def test_every_kind_goes_to_rows_and_back_unchanged() -> None:
    assert {type(r) for r in EVERY_KIND.records} == set(KINDS)  # the fixture covers every kind
    rows = dict(EVERY_KIND.items())
    assert len(rows) == sum(1 for _ in EVERY_KIND.items())  # no name is used twice
    back = StepFacts.of_items(rows)
    for kind in KINDS:
        assert back.of(kind) == EVERY_KIND.of(kind), kind


def test_the_stored_names_are_the_ones_the_readers_know() -> None:
    rows = dict(EVERY_KIND.items())
    assert rows[StepFact.QUIET_WAIT_S] == 0.42 and rows[StepFact.QUIET_BACKENDS_LEFT] == 3.0
    assert rows[StepFact.QUIET_SPREAD_CHECKPOINT] == 1.0 and StepFact.QUIET_IMMEDIATE_CHECKPOINT not in rows
    assert rows["end.mem.memavailable_kb"] == 1.0 and rows["end.pss.idle_backends"] == 8.0
    assert rows["before_idle.mem.memavailable_kb"] == 8e6 and "before_idle.pss.server_kb" not in rows
    assert rows[StepFact.NET_RELAY_SIGNAL] == 9.0 and StepFact.NET_RELAY_EXIT_CODE not in rows
    assert rows[StepFact.SERVER_RESTARTED] == 1.0 and StepFact.POOLER_DIED not in rows
    assert rows["setting.max_connections"] == 100.0
    assert rows[StepFact.BENCH_SECONDS] == 10.02 and rows[StepFact.STEADY_STOPPED] == 1.0


def test_a_kind_with_none_of_its_names_stored_is_absent() -> None:
    back = StepFacts.of_items({StepFact.BENCH_SECONDS: 10.0, StepFact.LOG_SAMPLING_RATE: 1.0})
    assert back.of(Measured) == Measured(10.0, 1.0, None)
    assert back.of(Network) is None and back.of(Faults) is None and back.of(Settings) is None


def test_a_stored_false_is_false_and_the_types_come_back() -> None:
    back = StepFacts.of_items({StepFact.STEADY_STOPPED: 0.0, StepFact.IDLE_OPENED: 500.0,
                               StepFact.IDLE_OPEN_S: 2.0})
    auto, idle = back.of(AutoDuration), back.of(IdleSessions)
    assert auto == AutoDuration(False, None) and auto is not None and auto.stopped is False
    assert idle is not None and isinstance(idle.opened, int) and idle.open_at_end is None


@pytest.mark.parametrize(("relay", "death"), [
    (RelayEnd(exit_code=1), "exit code 1"), (RelayEnd(signal=9), "signal 9"), (RelayEnd(0.1, 0.2, 3.0), None),
])
def test_how_the_relay_died(relay: RelayEnd, death: str | None) -> None:
    assert relay.death == death


def test_a_draft_keeps_the_last_record_of_each_kind() -> None:
    draft = FactsDraft(None, Network(4.0, 1.0))
    draft.add(None)
    draft.add(Network(4.0, 2.5))  # the agents' probe replaces this host's
    draft.add(MemoryBeforeIdle(mem_free_kb=1.0))
    draft.add(MemoryAtEnd(mem_free_kb=2.0))  # a picture of another moment: both kept
    frozen = draft.freeze()
    assert frozen.of(Network) == Network(4.0, 2.5)
    assert frozen.of(MemoryBeforeIdle) == MemoryBeforeIdle(mem_free_kb=1.0)
    assert frozen.of(MemoryAtEnd) == MemoryAtEnd(mem_free_kb=2.0)
    assert draft.of(QuietWait) is None


def test_what_failed_a_step_from_outside_comes_most_telling_first() -> None:
    from pgknee.run.verdict import _outside_causes

    draft = FactsDraft(RelayEnd(exit_code=1), Faults(server_restarted=True))
    assert _outside_causes(draft) == ["the server restarted or could not be reached during the step",
                                      "the simulated network hop (pgknee's relay) died during the step (exit code 1)"]
    assert _outside_causes(FactsDraft(RelayEnd(0.1, 0.2, 3.0), Faults(pooler_died=True))) == []


def test_names_no_record_reads_are_kept_as_they_were() -> None:
    """An older run's facts (the quiet wait's one quiet.checkpoint, net.relay_died) reach the JSON
    and a copy unchanged; a None field of a record read back is not taken for one."""
    stored = {StepFact.QUIET_WAIT_S: 0.4, "quiet.checkpoint": 0.5, "net.relay_died": -9.0}
    back = StepFacts.of_items(stored)
    assert back.of(QuietWait) == QuietWait(0.4)
    assert back.of(Unread) == Unread((("quiet.checkpoint", 0.5), ("net.relay_died", -9.0)))
    assert dict(back.items()) == stored
    assert StepFacts.of_items({StepFact.QUIET_WAIT_S: 0.4}).of(Unread) is None


def test_a_step_that_completed_no_transaction_does_not_count() -> None:
    """256 clients through one pgbouncer process on a loaded 2-CPU machine connected for the whole
    4 s step: pgbench exited 0 with no transaction, and the step was stored as completed. Whatever
    the window, a step of no transaction is not a measurement; one of a transaction is."""
    from pgknee.model.results import PgbenchSummary, StepMeasurement
    from pgknee.plan.model import Variant
    from pgknee.run.schedule import StepSpec
    from pgknee.run.verdict import _not_counted

    spec = StepSpec(3, Variant(), 256, 1)
    none = StepMeasurement(0, 0, 0, 0, 0.0, None, ())
    why = _not_counted(spec, 4, PgbenchSummary(transactions=0), none, 4.0, 0)
    assert why == ("pgbench completed no transaction in the 4 s step (its 256 clients were still connecting, or "
                   "waiting); lengthen --duration")
    why = _not_counted(spec, 4, PgbenchSummary(transactions=0, conn_time_ms=3900.0, duration_s=4.0), none, 0.1, 0)
    assert why is not None and "opening its 256 connections took 3.9 s" in why
    assert _not_counted(spec, 4, PgbenchSummary(transactions=1), StepMeasurement(1, 0, 0, 0, 0.25, None, ()), 4.0,
                        0) is None
