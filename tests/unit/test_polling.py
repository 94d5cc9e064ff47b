"""The one polling loop (clock.polling) and what is built on it (proc.wait_until)."""

from __future__ import annotations

import time

import pytest

from pgknee.base.clock import polling
from pgknee.system.proc import wait_until


def test_it_yields_at_once_then_every_interval_and_last_at_the_timeout() -> None:
    t0 = time.monotonic()
    seen = list(polling(0.25, 0.1))
    took = time.monotonic() - t0
    assert seen[0] < 0.01  # the first look is at once
    assert seen[-1] >= 0.25 and 3 <= len(seen) <= 5, seen  # 0, 0.1, 0.2, 0.25 on a calm machine
    assert all(b > a for a, b in zip(seen, seen[1:], strict=False))
    assert 0.25 <= took < 1.0


def test_a_zero_timeout_looks_once() -> None:
    assert len(list(polling(0.0, 1.0))) == 1


def test_the_caller_leaves_when_it_has_what_it_waits_for() -> None:
    calls = []
    for waited in polling(5.0, 0.01):
        calls.append(waited)
        if len(calls) == 3:
            break
    assert len(calls) == 3 and calls[-1] < 1.0


@pytest.mark.parametrize(("answer_after", "timeout", "expected"), [(2, 1.0, True), (10**9, 0.1, False)])
def test_wait_until(answer_after: int, timeout: float, expected: bool) -> None:
    n = [0]

    def pred() -> bool:
        n[0] += 1
        return n[0] > answer_after

    assert wait_until(pred, timeout=timeout, interval=0.01) is expected
