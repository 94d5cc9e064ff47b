"""The statistics of bench/observer_effect.py (the bench itself is not a test: it runs for
minutes on a server of its own)."""

from __future__ import annotations

import math

import pytest
from builders import load_bench

oe = load_bench("observer_effect")


def test_the_ratio_is_the_geometric_mean_with_a_normal_interval() -> None:
    logs = [math.log(0.9), math.log(1.0), math.log(1.1)]
    mid, lo, hi = oe.ratio_interval(logs)
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    assert mid == pytest.approx(math.exp(m))
    assert lo == pytest.approx(math.exp(m - 1.96 * sd / math.sqrt(3)))
    assert hi == pytest.approx(math.exp(m + 1.96 * sd / math.sqrt(3)))
    assert oe.ratio_interval([0.1])[1:] == (0.0, math.inf)  # one pair: no interval


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
    # 4,000 kept (200 x 0.02): p99 from 40 beyond it, some 10%; the 20,000 pgknee keeps: within 5%
    assert oe.sampled_percentile_errors(latency, 0.1, draws=100)["p99_err95"] < 0.05
