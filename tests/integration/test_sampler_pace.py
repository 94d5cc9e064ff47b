"""The pg_stat_activity sampler slows down by itself when its query overruns the interval, on a
real server. A real query cannot be made to take 100 ms without thousands of backends
(bench/sampler_scale.py does that), so the interval is made shorter than any round trip:
0.2 ms, which every query overruns."""

from __future__ import annotations

import re
import statistics
import time

import pytest

from pgknee.collect.activity import ActivitySampler
from pgknee.collect.pace import WINDOW, series_125
from pgknee.collect.protocol import StepProcesses
from pgknee.targets.local import EmbeddedCluster

BASE_S = 0.0002


def test_a_sampler_whose_query_overruns_slows_down_says_so_and_starts_each_step_at_the_plan_s_rate(
        server: EmbeddedCluster) -> None:
    with server.endpoint.connect("test") as c:
        row = c.execute("SHOW server_version_num").fetchone()
    assert row is not None
    said: list[str] = []
    s = ActivitySampler(server.endpoint, int(row[0]), BASE_S, jitter=0.0, on_slow=said.append)
    s.start()
    try:
        s.begin_step(StepProcesses(1))
        time.sleep(1.0)
        (first,) = s.end_step()
        s.begin_step(StepProcesses(2))
        assert s.interval_s == BASE_S  # a new step: the plan's rate again
        time.sleep(0.5)
        (second,) = s.end_step()
    finally:
        s.close()
    assert first is not None and second is not None
    ms = [float(x[-1]) for x in first.snapshots]
    assert len(ms) >= WINDOW and statistics.median(ms[:WINDOW]) > BASE_S * 1000
    # the first window's queries took more than half the interval: it went to at least twice
    # their median, on the 1-2-5 series, and never back within the step
    assert first.interval_s >= 2 * statistics.median(ms[:WINDOW]) / 1000
    assert first.interval_s == pytest.approx(series_125(first.interval_s))
    assert first.ticks_late >= 1  # the ticks after the first overran queries began late
    assert second.interval_s > BASE_S and second.snapshots
    # told from the sampler's thread, once per new low: each line a longer interval than the last
    assert said and all(t.startswith("pg_stat_activity sampling slowed to ") for t in said)
    told = [float(re.search(r"\(every ([0-9.]+) ms\)", t).group(1)) for t in said]  # type: ignore[union-attr]
    assert told == sorted(set(told))
    assert told[-1] == pytest.approx(max(first.interval_s, second.interval_s) * 1000, rel=1e-6)
