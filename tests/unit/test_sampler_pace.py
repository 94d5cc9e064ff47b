"""The pg_stat_activity sampler's own rate (collect.pace): when it lengthens its interval, to
what, and how a run's reader is told (analyze.warnings)."""

from __future__ import annotations

import dataclasses

import pytest
from builders import make_run_data

from pgknee.analyze.run import build
from pgknee.analyze.warnings import run_warnings
from pgknee.collect.pace import BUDGET, MAX_INTERVAL_S, WINDOW, Pace, series_125, slower_interval
from pgknee.model.facts import ActivityGaps, StepFacts


@pytest.mark.parametrize(("at_least", "expected"), [
    (0.1, 0.1), (0.1000001, 0.2), (0.15, 0.2), (0.2, 0.2), (0.27, 0.5), (0.5, 0.5), (0.6, 1.0), (1.0, 1.0),
    (1.01, 2.0), (3.0, 5.0), (7.0, 10.0), (0.03, 0.05), (0.25, 0.5)])
def test_the_series_is_1_2_5(at_least: float, expected: float) -> None:
    assert series_125(at_least) == pytest.approx(expected)


def test_the_series_wants_a_positive_interval() -> None:
    with pytest.raises(ValueError):
        series_125(0.0)


def test_a_slower_interval_leaves_the_query_half_of_it() -> None:
    assert BUDGET == 0.5
    assert slower_interval(0.1, 0.062) == pytest.approx(0.2)  # 62 ms wants 124 ms: 200 ms
    assert slower_interval(0.1, 0.135) == pytest.approx(0.5)  # 135 ms wants 270 ms: 500 ms
    assert slower_interval(0.1, 0.051) == pytest.approx(0.2)  # just over the budget: one step
    assert slower_interval(0.2, 0.09) == pytest.approx(0.5)  # always longer than the current one
    assert slower_interval(0.1, 30.0) == pytest.approx(MAX_INTERVAL_S)  # no slower than the cap
    assert slower_interval(0.25, 0.2) == pytest.approx(0.5)  # a plan's interval off the series


def test_the_pace_waits_for_a_window_and_lengthens_on_the_median() -> None:
    p = Pace(0.1)
    for _ in range(WINDOW - 1):
        assert p.observe(0.135) is None  # too few ticks to judge
    assert p.observe(0.135) == pytest.approx(0.5)
    assert (p.interval_s, p.lowered, p.took_s) == (pytest.approx(0.5), True, pytest.approx(0.135))
    # the window starts afresh: 135 ms fits half of 500 ms, so it stays there
    assert all(p.observe(0.135) is None for _ in range(3 * WINDOW))
    assert p.interval_s == pytest.approx(0.5)


def test_one_slow_tick_does_not_slow_the_sampler() -> None:
    p = Pace(0.1)
    took = [0.01, 0.01, 0.4, 0.01, 0.012] * 4  # an outlier in each window: the median is 10 ms
    assert [p.observe(t) for t in took] == [None] * len(took)
    assert not p.lowered


def test_the_pace_goes_on_lengthening_while_the_queries_grow_and_a_step_starts_fast_again() -> None:
    p = Pace(0.1)
    got = [p.observe(t) for t in [0.06] * WINDOW + [0.2] * WINDOW + [1.5] * WINDOW]
    assert [x for x in got if x is not None] == [pytest.approx(0.2), pytest.approx(0.5), pytest.approx(5.0)]
    assert all(p.observe(3.0) is None for _ in range(2 * WINDOW))  # at the cap
    p.reset()
    assert (p.interval_s, p.lowered) == (0.1, False)
    assert all(p.observe(0.04) is None for _ in range(2 * WINDOW))  # 40 ms: within half of 100 ms


def test_the_reader_is_told_which_steps_were_sampled_slower() -> None:
    data = make_run_data()  # plan: sampling every 100 ms
    facts = {1: StepFacts((ActivityGaps(interval_s=0.1),)), 3: StepFacts((ActivityGaps(interval_s=0.5),)),
             4: StepFacts((ActivityGaps(interval_s=0.2, ticks_late=7),))}
    lines = [w for w in run_warnings(build(dataclasses.replace(data, facts=facts))) if "slowed" in w]
    assert lines == ["pg_stat_activity sampling slowed down by itself from 10 Hz in step 3 (c8 rep 1 base: 2 Hz), "
                     "4 (c8 rep 2 base: 5 Hz): its query took more than half the interval (it reads every backend); "
                     "the wait profile's averages hold, from fewer snapshots"]
    assert not [w for w in run_warnings(build(data)) if "slowed" in w]  # no fact, no line (older runs)
