"""bench/report_size.py's computations: its shapes, its summary of repeated timings, and the
synthetic store it writes (what a real one-hour run leaves, through pgknee's own writer)."""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType

import pytest
from builders import load_bench

from pgknee.store.db import Store
from pgknee.store.load import load_run


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("report_size")


def test_the_one_hour_shapes_add_up_to_an_hour(bench: ModuleType) -> None:
    hour, linear = bench.SHAPES["hour"], bench.SHAPES["linear"]
    assert (hour.steps, hour.seconds, hour.measured_s) == (60, 60, 3600)
    assert len(hour.variants) == 2 and len(hour.clients) == 10 and hour.reps == 3
    assert (linear.steps, linear.measured_s) == (60, 3600) and linear.clients[0] == 50 and linear.clients[-1] == 1000


def test_the_summary_of_repeated_timings(bench: ModuleType) -> None:
    s = bench.summary([2.0, 4.0, 3.0, 10.0])
    assert s == {"median": 3.5, "min": 2.0, "max": 10.0, "spread": pytest.approx(8.0 / 3.5), "n": 4}
    assert bench.summary([0.0, 0.0])["spread"] == 0.0


def test_stored_sessions_are_most_of_the_clients(bench: ModuleType) -> None:
    rnd = random.Random(1)
    counts = [bench.stored_sessions(40, rnd) for _ in range(500)]
    assert min(counts) >= 28 and max(counts) <= 38  # 70..95% of 40
    assert bench.stored_sessions(1, rnd) in (0, 1)


def test_the_synthetic_store_reads_back_as_a_completed_run(bench: ModuleType, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGKNEE_STATE_DIR", str(tmp_path / "state"))
    shape = bench.SHAPES["tiny"]
    run_id = bench.write_store(tmp_path / "s.db", shape)
    store = Store(tmp_path / "s.db", create=False)
    try:
        data = load_run(store, run_id)
        rows = store.db.execute("SELECT count(*) FROM snap_pg_stat_activity WHERE _phase = 'bench'").fetchone()[0]
    finally:
        store.close()
    assert data.run.status == "completed" and len(data.steps) == shape.steps == 6
    assert sum(s.duration_s for s in data.steps) == shape.measured_s == 30
    assert [(s.clients, s.rep, s.variant) for s in data.steps[:2]] == [(1, 1, "normal"), (1, 1, "pipeline")]
    for s in data.steps:
        assert s.status == "completed" and s.tps == pytest.approx(s.tps_db)
        assert [t for t, _ in data.progress[s.step_id]] == [1.0, 2.0, 3.0, 4.0, 5.0]  # every second
        assert len(data.client_os(s.step_id)) == 5  # every second of the bench phase
        n, clients, _ = data.snaps[s.step_id]
        assert n == 50 and clients == s.clients  # 10 Hz over 5 s
        assert data.scripts[s.step_id][0].script == "tpcb-like"
    # every stored session row of the bench phase is a client backend, counted once in the waits
    # (active ones) or as idle in transaction (Client:ClientRead)
    counted = sum(c for w in data.waits.values() for *_, c in w)
    idle_in_xact = rows - counted
    assert counted > 0 and 0 <= idle_in_xact < counted
    assert {e for w in data.waits.values() for e, *_ in w} <= {"CPU", "LWLock", "IO", "Lock"}
