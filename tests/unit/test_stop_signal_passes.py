"""A stop signal is never taken for a server fault: `Interrupted` (raised by the signal handler
wherever the main thread is, a PgkneeError like the server's faults) passes through the readers
that take a failing server as a gap. Each is given an endpoint whose connect is where the signal
lands; the stop must reach the run loop (it once ended a run as completed)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pgknee.base.errors import Interrupted, TargetError
from pgknee.collect.waitsampling import WaitProfiler
from pgknee.netsim.control import try_probe
from pgknee.targets.base import Endpoint


class _Landing:
    """Where the signal lands: the connection being opened."""

    label = "127.0.0.1:1/x"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def connect(self, *_: Any, **__: Any) -> Any:
        raise self.exc


def _ep(exc: Exception) -> Endpoint:
    return cast(Endpoint, _Landing(exc))


def test_the_round_trip_probe_passes_a_stop_on_and_takes_a_fault_as_no_answer() -> None:
    with pytest.raises(Interrupted):
        try_probe(_ep(Interrupted("interrupted by SIGTERM")))
    assert try_probe(_ep(TargetError("the server went away"))) is None


def test_the_wait_profile_passes_a_stop_on_and_takes_a_fault_as_a_gap() -> None:
    with pytest.raises(Interrupted):
        WaitProfiler(_ep(Interrupted("interrupted by SIGTERM")), None, 10.0).begin()
    gap = WaitProfiler(_ep(TargetError("the server went away")), None, 10.0)
    gap.begin()  # no profile for this step, and no failure
    gap.end()
