"""collect.protocol's Samplers: one loop drives every sampler of a step, in order, and ends them
in reverse (the wait profile needs pg_stat_activity's benchmark backends before that sampler
ends); a step's own sampler joins and leaves; a reconnect tries every sampler."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pgknee.collect.protocol import Samplers, StepSamples
from pgknee.errors import TargetError
from pgknee.types import OsSamples, PoolerSamples


@dataclass
class Fake:
    name: str
    calls: list[str]
    queries_run: int = 0
    fail_reconnect: bool = False
    record: object | None = None
    phases: list[str] = field(default_factory=list)

    def begin_step(self, step_id: int) -> None:
        self.calls.append(f"{self.name}.begin {step_id}")

    def set_phase(self, phase: str) -> None:
        self.phases.append(phase)

    def end_step(self) -> object | None:
        self.calls.append(f"{self.name}.end")
        return self.record

    def reconnect(self) -> None:
        self.calls.append(f"{self.name}.reconnect")
        if self.fail_reconnect:
            raise TargetError(f"{self.name} cannot reconnect")

    def close(self) -> None:
        self.calls.append(f"{self.name}.close")


def test_driven_in_order_and_ended_in_reverse() -> None:
    calls: list[str] = []
    a, b = Fake("activity", calls, queries_run=5), Fake("waits", calls, queries_run=2, record=OsSamples(((1,),)))
    samplers = Samplers()
    samplers.add(a)
    samplers.add(b)
    samplers.begin_step(7)
    for phase in ("warmup", "bench", "post"):
        samplers.set_phase(phase)
    ends = samplers.end_step()
    assert calls == ["activity.begin 7", "waits.begin 7", "waits.end", "activity.end"]
    assert a.phases == b.phases == ["warmup", "bench", "post"]
    assert samplers.queries_run == 7
    assert ends.records == (OsSamples(((1,),)),)  # a sampler with nothing for the step gives no record


def test_a_steps_own_sampler_joins_for_the_step_and_leaves_with_its_record() -> None:
    calls: list[str] = []
    run_long, own = Fake("os", calls), Fake("pooler", calls, record=PoolerSamples(((1, 2),), ("gone",)))
    samplers = Samplers()
    samplers.add(run_long)
    with samplers.joined(own, 3):
        samplers.set_phase("bench")
        assert samplers.leave(own) == PoolerSamples(((1, 2),), ("gone",))
        assert samplers.leave(own) is None  # it left already
        samplers.set_phase("post")
    assert own.phases == ["bench"] and run_long.phases == ["bench", "post"]
    assert samplers.all == [run_long]
    assert "pooler.close" not in calls  # its pooler stops it (pooler.lab), not the run's samplers


def test_a_joined_sampler_leaves_when_the_step_fails() -> None:
    samplers, own = Samplers(), Fake("pooler", [])
    with pytest.raises(RuntimeError), samplers.joined(own, 1):
        raise RuntimeError("the step failed")
    assert samplers.all == []


def test_reconnect_tries_every_sampler_and_raises_the_first_failure() -> None:
    calls: list[str] = []
    samplers = Samplers()
    for name, fail in (("activity", True), ("os", False), ("waits", True)):
        samplers.add(Fake(name, calls, fail_reconnect=fail))
    with pytest.raises(TargetError, match="activity cannot reconnect"):
        samplers.reconnect()
    assert calls == ["activity.reconnect", "os.reconnect", "waits.reconnect"]


def test_records_are_found_by_type() -> None:
    ends = StepSamples((OsSamples(()), PoolerSamples(((1,),))))
    assert ends.of(PoolerSamples) == PoolerSamples(((1,),))
    assert ends.of(OsSamples) == OsSamples(())
    assert ends.of(int) is None
