"""The statistics of bench/observer_effect.py (the bench itself is not a test: it runs for
minutes on a server of its own)."""

from __future__ import annotations

import math

import pytest
from builders import load_bench

oe = load_bench("observer_effect")


def test_the_ratio_is_the_geometric_mean_with_a_students_t_interval() -> None:
    logs = [math.log(0.9), math.log(1.0), math.log(1.1)]
    mid, lo, hi = oe.ratio_interval(logs)
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    assert oe.t95(3) == pytest.approx(4.3027, abs=1e-4)  # two degrees of freedom: not the normal's 1.96
    assert oe.t95(1000) == pytest.approx(1.9623, abs=1e-4)
    assert mid == pytest.approx(math.exp(m))
    assert lo == pytest.approx(math.exp(m - 4.3027 * sd / math.sqrt(3)), rel=1e-4)
    assert hi == pytest.approx(math.exp(m + 4.3027 * sd / math.sqrt(3)), rel=1e-4)
    assert oe.ratio_interval([0.1])[1:] == (0.0, math.inf)  # one pair: no interval


def test_a_target_is_met_missed_or_not_shown_by_the_interval() -> None:
    assert oe.verdict(0.99, 0.985, 0.995, 0.98, at_least=True) == "met"
    assert oe.verdict(0.95, 0.93, 0.97, 0.98, at_least=True) == "missed by 3.1%"
    assert oe.verdict(0.99, 0.97, 1.01, 0.98, at_least=True) == "not shown (the interval straddles it)"
    assert oe.verdict(1.01, 1.00, 1.02, 1.03, at_least=False) == "met"  # CPU: at most 3% more
    assert oe.verdict(1.10, 1.06, 1.14, 1.03, at_least=False) == "missed by 6.8%"


def test_the_cpu_ratio_pairs_each_pgknee_run_with_its_bare_twin() -> None:
    r = oe.Result(4, 2, 10)
    r.sides["bare"] = [oe.Side(1000.0, 10_000, 0.20), oe.Side(1000.0, 10_000, 0.25)]
    r.sides["pgknee"] = [oe.Side(990.0, 9_900, 0.22), oe.Side(990.0, 10_000, 0.0)]  # a run /proc missed: left out
    (only,) = oe.cpu_log_ratios(r)
    assert only == pytest.approx(math.log((0.22 / 9_900) / (0.20 / 10_000)))


def test_pairs_are_added_until_the_interval_is_narrow_enough() -> None:
    wide = [math.log(x) for x in (0.9, 1.1, 0.95, 1.05, 0.92, 1.08)]
    tight = [math.log(x) for x in (0.99, 1.01, 1.0, 0.995, 1.005, 1.0)]
    assert not oe.narrow_enough(wide, 0.02, 6)
    assert oe.narrow_enough(tight, 0.02, 6)
    assert not oe.narrow_enough(tight[:5], 0.02, 6)  # fewer than the minimum


def test_the_order_alternates_a_b_b_a() -> None:
    assert [oe.order_of(i) for i in range(3)] == [("bare", "pgknee"), ("pgknee", "bare"), ("bare", "pgknee")]


def test_sampled_percentile_errors_shrink_with_the_sample_and_are_exact_at_rate_one() -> None:
    import numpy as np

    rng = np.random.default_rng(4)
    latency = rng.lognormal(7.5, 0.7, 200_000)
    full = oe.sampled_percentile_errors(latency, 1.0, draws=5)
    assert max(full.values()) == 0.0  # every transaction kept: the full log's percentiles
    small, large = (oe.sampled_percentile_errors(latency, r, draws=100) for r in (0.02, 0.2))
    assert set(small) == {f"p{p}_{k}" for p in (50, 95, 99) for k in ("err95", "errmax")}
    assert large["p99_err95"] < small["p99_err95"]
    assert small["p50_err95"] < small["p99_err95"]  # the tail is what the sample size is chosen for
    # 4,000 kept (200 x 0.02): p99 from 40 beyond it, some 10%; the 20,000 of a 0.1 sample: within 5%
    assert oe.sampled_percentile_errors(latency, 0.1, draws=100)["p99_err95"] < 0.05
