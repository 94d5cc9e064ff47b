"""The statistics of bench/sampler_overhead.py, bench/sampler_overhead_runs.py and bench/memory.py
(the benches themselves run for minutes on servers of their own)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import load_bench

so = load_bench("sampler_overhead")
sor = load_bench("sampler_overhead_runs")
mem = load_bench("memory")


def test_the_pairs_interval_is_students_t_over_the_log_ratios() -> None:
    xs = [math.log(1.01), math.log(0.99), math.log(1.02), math.log(1.0)]
    m = sum(xs) / 4
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / 3)
    half = 3.1824 * sd / 2  # t(0.975, 3 degrees of freedom), not the normal's 1.96
    text = so.interval_text(xs)
    assert text.startswith(f"{(math.exp(m) - 1) * 100:+.2f}%")
    assert f"95% interval {(math.exp(m - half) - 1) * 100:+.2f}% .. {(math.exp(m + half) - 1) * 100:+.2f}%" in text
    assert "4 pairs" in text


@pytest.mark.parametrize(("overhead", "noise", "says"), [
    (0.004, 0.003, "met"),                  # below 1%, the run resolves 1%
    (0.015, 0.003, "missed"),               # above it, beyond the noise
    (0.004, 0.02, "not shown: the A/A noise is larger than the target"),
    (-0.03, 0.005, "not shown: a negative overhead beyond the A/A noise is drift, not a saving"),
    (-0.002, 0.005, "met"),                 # slightly negative, inside the noise: no cost seen
])
def test_a_negative_overhead_never_meets_the_target(overhead: float, noise: float, says: str) -> None:
    assert sor.outcome(overhead, noise) == says
    assert f"the 1.0% target {says}" in sor.verdict(overhead, noise, "100ms")


def test_the_rounds_rotate_the_arms() -> None:
    orders = [sor.round_order(i) for i in range(3)]
    assert all(sorted(o) == sorted(sor.ARMS) for o in orders)
    assert len({tuple(o) for o in orders}) == 3  # each arm first once in three rounds


def test_memory_reports_each_percentiles_error_against_the_exact_one() -> None:
    lat = np.random.default_rng(3).lognormal(7, 0.5, 50_000)  # microseconds
    exact = mem._exact(lat)
    assert exact["count"] == 50_000 and exact["p50_ms"] == pytest.approx(np.percentile(lat, 50) / 1000)
    got = {**exact, "p99_ms": exact["p99_ms"] * 1.02}
    worst: list[float] = []
    text = mem._errors(got, exact, worst)
    assert "(2.000 %)" in text and max(worst) == pytest.approx(0.02) and len(worst) == 3


def test_memory_checks_the_counts_it_wrote() -> None:
    totals = {"lines": 1000, "failed": 10, "retries": 7, "retried": 5, "serialization": 8, "deadlock": 2}
    ok = {"result": {"transactions": 990, "failed": 10, "retries": 7, "retried": 5,
                     "failures": {"serialization": 8, "deadlock": 2}}}
    assert mem._check_counts(ok, totals) == []
    bad = {"result": {**ok["result"], "transactions": 991, "failures": {"serialization": 8}}}
    assert mem._check_counts(bad, totals) == ["transactions: measured 991, written 990",
                                              "failures: measured {'serialization': 8}"]
