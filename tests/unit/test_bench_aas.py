"""The computations of bench/aas_accuracy.py (the bench itself is not a test: it runs for minutes
on a server of its own)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import pytest
from builders import load_bench

aa = load_bench("aas_accuracy")


def row(pid: int, state: str | None, etype: str | None = None, event: str | None = None, *,
        app: str = "pgbench", backend: str = "client backend") -> tuple[Any, ...]:
    """A sampler row as collect.activity hands it over: (at, phase, *ACTIVITY_COLUMNS)."""
    values = dict.fromkeys(aa.ACTIVITY_COLUMNS)
    values.update(pid=pid, state=state, wait_event_type=etype, wait_event=event, application_name=app,
                  backend_type=backend)
    return ("2024-01-01T00:00:00", "bench", *(values[c] for c in aa.ACTIVITY_COLUMNS))


def test_errors_are_signed_percentages_of_the_truth() -> None:
    assert aa.pct(0.91, 1.0) == pytest.approx(-9.0)
    assert aa.pct(1.05, 1.0) == pytest.approx(5.0)
    assert aa.pct(0.0, 0.0) == 0.0
    assert math.isinf(aa.pct(1.0, 0.0))


def test_states_count_client_sessions_over_every_snapshot() -> None:
    rows = [row(1, "active"), row(2, "idle in transaction", "Client", "ClientRead"), row(1, "active"),
            row(9, None, "Activity", "WalWriterMain", backend="walwriter")]
    states = aa.sampled_states(rows, 4)  # 4 snapshots, two of them empty
    assert states == {"active": 0.5, "idle in transaction": 0.25}
    assert aa.sampled_states(rows, 0) == {}


def test_events_are_those_of_active_client_sessions_cpu_when_no_wait() -> None:
    rows = [row(1, "active"), row(2, "active", "LWLock", "WALWrite"), row(2, "active", "LWLock", "WALWrite"),
            row(3, "idle in transaction", "Client", "ClientRead"), row(4, "active", "IO", "WALSync"),
            row(5, "active", backend="autovacuum worker")]
    assert aa.sampled_events(rows, 2) == {("CPU", "running"): 0.5, ("LWLock", "WALWrite"): 1.0,
                                          ("IO", "WALSync"): 0.5}
    assert aa.sampled_events(rows, 2, frozenset({2})) == {("LWLock", "WALWrite"): 1.0}


def test_the_benchmarks_backends_are_pgbench_client_sessions() -> None:
    rows = [row(1, "active"), row(2, "idle in transaction"), row(3, "active", app="psql"),
            row(4, None, backend="walwriter", app="")]
    assert aa.bench_pids(rows) == frozenset({1, 2})


def test_profile_diff_counts_what_was_added() -> None:
    before = {(1, "LWLock", "WALWrite"): 10, (2, "IO", "WALSync"): 5, (3, "Lock", "tuple"): 4}
    after = {(1, "LWLock", "WALWrite"): 25, (2, "IO", "WALSync"): 5, (4, "IO", "WALSync"): 7,
             (3, "Lock", "tuple"): 1}  # reset in between: dropped
    assert aa.profile_diff(before, after) == {(1, "LWLock", "WALWrite"): 15, (4, "IO", "WALSync"): 7}


def test_profile_aas_is_counts_over_the_probes_of_the_sleeping_reference() -> None:
    diff = {(1, "LWLock", "WALWrite"): 300, (2, "LWLock", "WALWrite"): 200, (2, "IO", "WALSync"): 100,
            (77, "Timeout", "PgSleep"): 1000, (5, "LWLock", "WALWrite"): 999}  # 5: another database's
    probes = aa.probes_of(diff, 77)
    assert probes == 1000
    assert aa.profile_events(diff, frozenset({1, 2}), probes) == {("LWLock", "WALWrite"): 0.5,
                                                                  ("IO", "WALSync"): 0.1}
    assert aa.profile_events(diff, frozenset({1}), 0) == {}
    assert aa.probes_of(diff, 78) == 0


def test_events_are_compared_from_half_a_session_up_cpu_and_client_left_out() -> None:
    sampled = {("LWLock", "WALWrite"): 2.0, ("IO", "WALSync"): 0.6, ("CPU", "running"): 1.5,
               ("Lock", "tuple"): 0.1}
    reference = {("LWLock", "WALWrite"): 2.2, ("IO", "WALSync"): 0.62, ("Client", "ClientRead"): 4.0,
                 ("Lock", "tuple"): 0.45}
    rows = aa.compare_events(sampled, reference)
    by = {r["event"]: r for r in rows}
    assert list(by) == ["Client:ClientRead", "LWLock:WALWrite", "CPU:running", "IO:WALSync"]
    assert by["LWLock:WALWrite"]["error_pct"] == pytest.approx(-9.0909, abs=1e-3)
    assert by["LWLock:WALWrite"]["ok"] is False
    assert by["IO:WALSync"]["ok"] is True
    assert by["CPU:running"]["comparable"] is False and by["CPU:running"]["ok"] is None
    assert by["Client:ClientRead"]["error_pct"] is None


def test_totals_compare_active_and_active_plus_idle_in_transaction() -> None:
    states = {"active": 2.7, "idle in transaction": 1.3, "idle in transaction (aborted)": 0.0}
    t = aa.totals(states, {"active_time": 30_000.0, "idle_in_transaction_time": 10_000.0}, 10.0)
    assert t["clock_active"] == pytest.approx(3.0)
    assert t["active_error_pct"] == pytest.approx(-10.0)
    assert t["clock_busy"] == pytest.approx(4.0)
    assert t["busy_error_pct"] == pytest.approx(0.0)


def test_summary_averages_rounds_and_judges_the_targets() -> None:
    def step(prio: str, act: float, busy: float, ev: list[dict[str, Any]]) -> dict[str, Any]:
        return {"protocol": "simple", "clients": 8, "priority": prio, "active_error_pct": act,
                "busy_error_pct": busy, "events": ev}

    e_ok = {"comparable": True, "ok": True, "error_pct": -2.0}
    e_off = {"comparable": True, "ok": False, "error_pct": 8.0}
    e_cpu = {"comparable": False, "ok": None, "error_pct": None}
    s = aa.summarize([step("normal", -10.0, -1.0, [e_ok, e_cpu]), step("normal", -6.0, 2.0, [e_off]),
                      step("fifo", 1.0, 0.5, [])])
    normal, fifo = s
    assert normal["steps"] == 2 and normal["active_error_pct"] == pytest.approx(-8.0) and not normal["active_ok"]
    assert normal["busy_error_pct"] == pytest.approx(0.5) and normal["busy_ok"]
    assert (normal["events_compared"], normal["events_ok"], normal["worst_event_error_pct"]) == (2, 1, 8.0)
    assert fifo["active_ok"] and fifo["worst_event_error_pct"] is None


def test_the_plan_alternates_priorities_from_round_to_round() -> None:
    args = argparse.Namespace(rounds=2, protocols=["simple"], clients=[8], priorities=["normal", "fifo"])
    assert list(aa.plan_steps(args)) == [(0, "simple", 8, "normal"), (0, "simple", 8, "fifo"),
                                         (1, "simple", 8, "fifo"), (1, "simple", 8, "normal")]
