"""Issue 16's measuring rules without a server: steady state from pgbench's progress (MSER-5 and
the batch-means interval), the log sampling rate for the percentiles, exact counts from pgbench's
summary when only a share of the transactions is logged, and --duration auto's parsing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pgknee.base.errors import UserError
from pgknee.driver.measure import measure, read_transaction_logs
from pgknee.driver.pgbench import Counts, parse_counts
from pgknee.driver.steady import SteadyWatch, batch_means, mser_truncation, steadiness
from pgknee.model.rules import LATENCY_MIN_SAMPLES, LATENCY_SAMPLES, LOG_SHARE_CAP, log_sampling_rate
from pgknee.plan import Plan
from pgknee.plan.files import plan_from_values
from pgknee.plan.parse import AUTO_MAX_S, parse_percent, parse_step_duration
from pgknee.workloads.base import Script


# ---- steady state ---------------------------------------------------------------------------------------
def test_batch_means_drop_a_partial_batch() -> None:
    assert batch_means([1, 2, 3, 4, 5, 6, 7]).tolist() == [3.0]
    assert batch_means(list(range(10))).tolist() == [2.0, 7.0]


def test_mser_cuts_a_ramp_of_known_length() -> None:
    rng = np.random.default_rng(3)
    y = np.r_[np.linspace(200, 1000, 15), 1000 + rng.normal(0, 20, 60)]
    d = mser_truncation(batch_means(y))
    assert d * 5 in (15, 20)  # the three batches of the ramp, give or take the one that straddles it


def test_a_stationary_series_is_steady_with_an_honest_interval() -> None:
    """Over many noise draws the 95% interval covers the true mean about 95% of the time."""
    rng = np.random.default_rng(7)
    covered, steady = 0, 0
    for _ in range(400):
        s = steadiness(list(1000 + rng.normal(0, 50, 60)))
        steady += s.steady
        covered += abs(s.mean_tps - 1000) <= s.halfwidth * s.mean_tps
    assert steady >= 0.9 * 400
    assert 0.90 <= covered / 400 <= 0.99


def test_a_series_still_climbing_is_not_steady() -> None:
    rng = np.random.default_rng(1)
    s = steadiness(list(np.linspace(500, 1000, 60) + rng.normal(0, 20, 60)))
    assert not s.steady


def test_too_few_seconds_give_no_interval() -> None:
    s = steadiness([100.0] * 12)
    assert not s.steady and s.halfwidth == math.inf


def test_the_watch_stops_once_the_interval_is_narrow_and_not_before_the_minimum() -> None:
    rng = np.random.default_rng(5)
    series = np.r_[np.linspace(100, 1000, 5), 1000 + rng.normal(0, 10, 200)]
    w = SteadyWatch(target=0.02, min_s=30)
    stopped_at = next(i + 1 for i, tps in enumerate(series) if w.add(float(tps)))
    assert stopped_at == 30  # steady long before, but not before the minimum
    assert w.steady_at_s == 30 and w.last is not None and w.last.halfwidth <= 0.02
    noisy = SteadyWatch(target=0.001, min_s=10)
    assert not any(noisy.add(float(t)) for t in 1000 + rng.normal(0, 100, 120))
    assert noisy.steady_at_s is None


# ---- the log's sampling rate --------------------------------------------------------------------------------
def test_the_sampling_rate_logs_about_the_wanted_number() -> None:
    assert LATENCY_SAMPLES == 10_000
    assert log_sampling_rate(None) == 1.0
    assert log_sampling_rate(12_000) == 1.0  # not much above the wanted number: all
    for expected in (100_001, 123_456, 720_000, 6e6, 1e8):  # a tenth or less: the wanted number
        rate = log_sampling_rate(expected)
        assert 0 < rate <= LOG_SHARE_CAP
        assert LATENCY_SAMPLES <= rate * expected <= 1.1 * LATENCY_SAMPLES  # rounded up, two figures
        assert len(f"{rate:g}".rstrip("0").split(".")[1].lstrip("0")) <= 2


def test_the_log_keeps_no_more_than_a_tenth_while_half_the_wanted_number_remains() -> None:
    assert LOG_SHARE_CAP == 0.1 and LATENCY_MIN_SAMPLES == 5_000
    # a 5 s step at 13,500 TPS: 10,000 would be 15% of its transactions; a tenth keeps 6,750
    assert log_sampling_rate(67_500) == 0.1
    assert log_sampling_rate(50_000) == 0.1  # exactly half the wanted number
    # fewer: as many as keep half the wanted number (5,000), rounded up to two figures
    for expected in (13_000, 20_000, 45_000):
        rate = log_sampling_rate(expected)
        assert LOG_SHARE_CAP < rate < 1
        assert LATENCY_MIN_SAMPLES <= rate * expected <= 1.1 * LATENCY_MIN_SAMPLES
    assert log_sampling_rate(12_000) == 1.0  # not much above the wanted number: all, as before


# ---- exact counts from the summary ---------------------------------------------------------------------------
SUMMARY_TWO_SCRIPTS = """\
transaction type: multiple scripts
number of transactions actually processed: 3961
number of failed transactions: 7 (0.177%)
number of serialization failures: 5 (0.126%)
number of deadlock failures: 1 (0.025%)
number of transactions retried: 12 (0.302%)
total number of retries: 15
latency average = 2.022 ms
tps = 1978.657870 (without initial connection time)
SQL script 1: <builtin: TPC-B (sort of)>
 - weight: 2 (targets 66.7% of total)
 - 2654 transactions (67.0% of total, tps = 1325.765712)
 - number of failed transactions: 7 (0.263%)
 - number of serialization failures: 5 (0.188%)
 - number of deadlock failures: 1 (0.038%)
 - number of transactions retried: 12 (0.452%)
 - total number of retries: 15
SQL script 2: <builtin: select only>
 - weight: 1 (targets 33.3% of total)
 - 1307 transactions (33.0% of total, tps = 652.892157)
 - number of failed transactions: 0 (0.000%)
"""


def test_counts_overall_and_per_script() -> None:
    c = parse_counts(SUMMARY_TWO_SCRIPTS)
    assert c is not None
    assert (c.transactions, c.failed, c.serialization, c.deadlock, c.retried, c.retries) == (3961, 7, 5, 1, 12, 15)
    assert [(s.transactions, s.failed, s.retried) for s in c.scripts] == [(2654, 7, 12), (1307, 0, 0)]
    assert parse_counts("pgbench: error: connection failed\n") is None


def _log(path: Path, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lat = np.round(rng.lognormal(np.log(2000), 0.6, n)).astype(np.int64)
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(f"{i % 4} {i // 4} {lat[i]} {i % 2} 1700000000 {i}\n")
    return lat


def test_a_sampled_log_takes_its_counts_from_the_summary(tmp_path: Path) -> None:
    lat = _log(tmp_path / "log.1", 2_000, 2)
    scripts = (Script("a", Path("a.sql"), 1), Script("b", Path("b.sql"), 1))
    counts = Counts(20_000, 9, 4, 0, 3, 5, scripts=(Counts(10_100, 9, 0, 0, 3, 5), Counts(9_900)))
    m = measure(read_transaction_logs([tmp_path / "log.1"]), scripts, 10.0, rate=0.1, counts=counts)
    assert (m.transactions, m.failed, m.retried, m.retries, m.tps) == (20_000, 9, 3, 5, 2_000.0)
    assert m.failures == {"serialization": 4, "other": 5}
    assert [(s.transactions, s.failed, s.tps) for s in m.scripts] == [(10_100, 9, 1_010.0), (9_900, 0, 990.0)]
    assert m.latency is not None and m.latency.count == 2_000  # latency from what was logged
    assert m.latency.mean_ms == pytest.approx(lat.mean() / 1000)
    # without a summary (pgbench killed) the logged counts are scaled up
    est = measure(read_transaction_logs([tmp_path / "log.1"]), scripts, 10.0, rate=0.1)
    assert est.transactions == 20_000 and est.scripts[0].transactions == 10_000


# ---- --duration auto ----------------------------------------------------------------------------------------
def test_step_durations_fixed_and_auto() -> None:
    assert parse_step_duration("90s", "--duration") == (90, False)
    assert parse_step_duration("auto", "--duration") == (AUTO_MAX_S, True)
    assert parse_step_duration("AUTO:5m", "--duration") == (300, True)
    with pytest.raises(UserError, match="not a duration"):
        parse_step_duration("auto:soon", "--duration")
    assert parse_percent("2%", "--steady-target") == 2.0 and parse_percent("0.5", "x") == 0.5
    with pytest.raises(UserError, match="not a percentage"):
        parse_percent("two", "--steady-target")


def test_auto_duration_in_the_plan() -> None:
    p = plan_from_values({"duration": "auto:90s", "steady_target": "3%"})
    assert (p.duration_s, p.steady_pct, p.log_sampling_rate) == (90, 3.0, None)
    assert plan_from_values({"duration": "30s", "steady_target": "3%"}).steady_pct is None
    with pytest.raises(UserError, match="shorter than a step's minimum"):
        plan_from_values({"duration": "auto:5s"})
    with pytest.raises(UserError, match="steady-target must be between"):
        Plan(duration_s=60, steady_pct=80.0)
