"""The figures of bench/sampler_scale.py (the bench itself is not a test: it opens thousands of
sessions on a server of its own for minutes)."""

from __future__ import annotations

import math

import pytest
from builders import load_bench

from pgknee.model.samples import ActivitySamples

ss = load_bench("sampler_scale")


def _snap(ms: float) -> tuple[object, ...]:
    return ("2026-01-01 00:00:00.000", "bench", 1.0, 5000, 4990, 500, 0, 0, ms)


def test_the_stages_are_increasing_counts_above_the_load() -> None:
    assert ss.parse_counts("100, 500,5000") == [100, 500, 5000]
    for bad in ("", "500,100", "100,100", f"{ss.LOAD_CLIENTS}", "x"):
        with pytest.raises(ValueError):
            ss.parse_counts(bad)


def test_cpu_ticks_are_read_after_the_command_s_last_parenthesis() -> None:
    # a command name holding ') ' must not shift the fields: utime is the 14th, stime the 15th
    fields = ["S", "1", "2", "3", "0", "-1", "4194560", "10", "0", "0", "0", "123", "45", "0", "0", "20"]
    assert ss.stat_ticks("4242 (postgres: a) b) " + " ".join(fields) + "\n") == 168


def test_percentiles_are_linear_between_ranks() -> None:
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert ss.percentile(xs, 50) == 3.0
    assert ss.percentile(xs, 95) == pytest.approx(4.8)  # rank 3.8: 4 + 0.8
    assert ss.percentile(xs, 100) == 5.0
    assert ss.percentile([7.0], 95) == 7.0
    assert math.isnan(ss.percentile([], 50))


def test_a_stage_s_sessions_are_split_around_pgbench_s_clients() -> None:
    assert ss.split_sessions(5000, 10) == (500, 5000 - 500 - ss.LOAD_CLIENTS)
    assert ss.split_sessions(100, 0) == (0, 100 - ss.LOAD_CLIENTS)


def test_memory_is_projected_at_the_mean_so_far() -> None:
    assert ss.projected_kb(1_500_000.0, 1000, 3000) == pytest.approx(4_500_000.0)
    assert math.isnan(ss.projected_kb(0.0, 0, 100))


def test_a_stage_s_figures() -> None:
    # 10 s at 100 ms asks for 100 ticks; 80 were taken, 8 of them late, 2 queries over 100 ms
    ms = [20.0] * 70 + [50.0] * 8 + [150.0, 120.0]
    rows = tuple(("at", "bench", i) for i in range(80 * 3))
    samples = ActivitySamples(tuple(_snap(x) for x in ms), rows, ticks_late=8, interval_s=0.2)
    f = ss.stage_figures(samples, 10.0, 0.1, server_ticks=40, python_ticks=8, clk_tck=100)
    assert f["ticks"] == 80 and f["expected"] == pytest.approx(100.0)
    assert f["kept_pct"] == pytest.approx(72.0)  # 72 began on time, of the 100 the plan asked for
    # more ticks than planned (a window a little long): more than 100%, not capped
    over = ActivitySamples(tuple(_snap(20.0) for _ in range(105)), (), ticks_late=0, interval_s=0.1)
    assert ss.stage_figures(over, 10.0, 0.1, 0, 0, clk_tck=100)["of_plan_pct"] == pytest.approx(105.0)
    assert f["of_plan_pct"] == pytest.approx(80.0)
    assert (f["late"], f["overran"], f["ended_ms"]) == (8, 2, pytest.approx(200.0))
    assert (f["ms_p50"], f["ms_max"]) == (20.0, 150.0)
    assert f["ms_p95"] == pytest.approx(50.0)  # rank 75.05 of 0..79: among the 50s
    assert f["server_cpu_ms"] == pytest.approx(400.0 / 80)  # 40 ticks of 10 ms over 80 ticks
    assert f["python_cpu_ms"] == pytest.approx(80.0 / 80)
    assert f["rows_per_tick"] == pytest.approx(3.0)
    assert f["rate_hz"] == pytest.approx(8.0)


def test_a_stage_without_snapshots_keeps_nothing() -> None:
    f = ss.stage_figures(ActivitySamples((), ()), 10.0, 0.1, 0, 0, clk_tck=100)
    assert (f["ticks"], f["kept_pct"], f["of_plan_pct"], f["rate_hz"]) == (0, 0.0, 0.0, 0.0)
    assert math.isnan(f["rows_per_tick"]) and math.isnan(f["server_cpu_ms"])


def test_the_fixed_pace_never_slows_down() -> None:
    p = ss.FixedPace(0.1)
    assert all(p.observe(1.0) is None for _ in range(20)) and p.interval_s == 0.1
