from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgknee.analyze.run import build
from pgknee.analyze.waits import article_aas, wait_profile
from pgknee.collect.activity import ACTIVITY_COLUMNS
from pgknee.collect.osproc import OS_COLUMNS
from pgknee.errors import StoreError
from pgknee.store import writer as writer_mod
from pgknee.store.db import SCHEMA_VERSION, Store, load_run
from pgknee.store.sql import load
from pgknee.store.writer import RunWriter
from pgknee.types import LatencyStats, PgbenchSummary, ScriptResult, StepMeasurement, StepResult

# the article's wait-profile query (000, section 7), verbatim
ARTICLE_SQL = """
SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*), COUNT(DISTINCT _collected_at)
FROM snap_pg_stat_activity
WHERE _run_id = ? AND _phase IN ('bench') AND state = 'active'
GROUP BY 1, 2
ORDER BY 3 DESC
LIMIT 20
"""


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct, increasing created_at values (runs made in one millisecond would tie)."""
    counter = itertools.count()
    monkeypatch.setattr(writer_mod, "now_iso", lambda: f"2025-01-01 00:00:{next(counter):02d}.000")


@pytest.fixture
def store(tmp_path: Path, clock: None) -> Iterator[Store]:
    s = Store(tmp_path / "pgknee.db")
    yield s
    s.close()


def _run(store: Store, run_id: str, steps: int = 2) -> RunWriter:
    w = RunWriter(store, run_id)
    w.create_run(workload="ewallet", target_kind="embedded", target_label="postgres@/tmp:5432/pgknee",
                 plan={"reps": 1, "duration_s": 10}, steps_planned=steps)
    return w


def _step(w: RunWriter, seq: int, clients: int) -> int:
    return w.begin_step({"seq": seq, "variant": "base", "clients": clients, "rep": 1, "threads": 2,
                         "protocol": "prepared", "duration_s": 10, "warmup_s": 0, "pipeline": 0,
                         "connect_per_txn": 0, "rate": None, "think_ms": 0.0, "pooler_kind": None, "pool_mode": None,
                         "pool_size": None, "pool_reserve": 0, "idle": 0, "idle_kind": None, "settings_json": None})


def _result(step_id: int, status: str, reason: str | None = None, *, tps: float | None = None,
            transactions: int = 0, lat_avg_ms: float = 1.0, scripts: tuple[ScriptResult, ...] = (),
            failures: dict[str, int] | None = None, pg_delta: dict[str, float] | None = None,
            os_rows: tuple[tuple[object, ...], ...] = ()) -> StepResult:
    lat = LatencyStats(transactions, lat_avg_ms, 0.0, lat_avg_ms, lat_avg_ms, lat_avg_ms, lat_avg_ms, lat_avg_ms)
    m = (StepMeasurement(transactions, 0, 0, 0, tps, lat, scripts, failures or {}) if tps is not None else None)
    return StepResult(step_id, status, reason, 0 if status == "completed" else 1, 0.0, 10.0, PgbenchSummary(), m,
                      None, pg_delta or {}, (), None, os_rows, {}, None)


# ---- opening and migrating ------------------------------------------------------------------------


def test_new_store_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    s = Store(path)
    try:
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in s.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"runs", "steps", "snapshots", "snap_pg_stat_activity", "os_samples", "step_scripts"} <= tables
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        s.close()
    assert SCHEMA_VERSION >= 1


def test_reopening_keeps_data(tmp_path: Path, clock: None) -> None:
    path = tmp_path / "s.db"
    s = Store(path)
    _run(s, "r1")
    s.close()
    s = Store(path, create=False)
    try:
        assert [r.run_id for r in s.runs()] == ["r1"]
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        s.close()


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError) as ei:
        Store(path)
    assert "newer pgknee" in ei.value.message
    assert f"format {SCHEMA_VERSION + 1}" in ei.value.message
    assert ei.value.exit_code == 5
    con = sqlite3.connect(path)  # not downgraded or touched
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        con.close()


def test_missing_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no collector database"):
        Store(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as ei:
        Store(tmp_path / "no" / "such" / "dir" / "x.db")
    assert "does not exist" in ei.value.message
    assert not (tmp_path / "no").exists()


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not an SQLite file at all, just some text " * 100)
    with pytest.raises(StoreError, match="cannot use the collector database"):
        Store(path)


# ---- runs and steps -------------------------------------------------------------------------------


def test_create_run_and_steps(store: Store) -> None:
    w = _run(store, "20250101-000000-aaaa")
    sid1, sid2 = _step(w, 1, 2), _step(w, 2, 4)
    assert sid1 != sid2
    w.write_step(_result(sid1, "completed", tps=123.5, transactions=1235, lat_avg_ms=16.2))
    w.write_step(_result(sid2, "failed", "pgbench exit 1: boom"))
    s1, s2 = store.steps("20250101-000000-aaaa")
    assert (s1.step_id, s1.seq, s1.clients, s1.status, s1.tps, s1.transactions, s1.lat_avg_ms) == (
        sid1, 1, 2, "completed", 123.5, 1235, 16.2)
    assert (s2.status, s2.status_reason, s2.tps) == ("failed", "pgbench exit 1: boom", None)
    run = store.resolve_run("20250101-000000-aaaa")
    assert run.status == "running" and run.steps_planned == 2
    assert json.loads(run.plan_json) == {"duration_s": 10, "reps": 1}
    w.finish_run("completed", None)
    assert store.resolve_run("last").status == "completed"


def test_step_status_is_checked(store: Store) -> None:
    w = _run(store, "r")
    sid = _step(w, 1, 2)
    with pytest.raises(sqlite3.IntegrityError):
        w.write_step(_result(sid, "weird"))
    assert store.steps("r")[0].status == "running"  # the step's whole write was rolled back


def test_resolve_run(store: Store) -> None:
    with pytest.raises(StoreError, match="no runs"):
        store.resolve_run("last")
    for rid in ("20250101-000000-aaaa", "20250101-000001-bbbb", "20250102-000000-cccc"):
        _run(store, rid)
    assert store.resolve_run("last").run_id == "20250102-000000-cccc"
    assert store.resolve_run("latest").run_id == "20250102-000000-cccc"
    assert store.resolve_run("20250101-000001").run_id == "20250101-000001-bbbb"  # unique prefix
    assert store.resolve_run("20250102").run_id == "20250102-000000-cccc"
    assert store.resolve_run("20250101-000000-aaaa").run_id == "20250101-000000-aaaa"  # exact
    with pytest.raises(StoreError) as ei:
        store.resolve_run("20250101")
    assert "matches 2 runs" in ei.value.message
    with pytest.raises(StoreError) as ei:
        store.resolve_run("nope")
    assert "no run 'nope'" in ei.value.message and ei.value.exit_code == 5


def test_exact_id_wins_over_prefix(store: Store) -> None:
    _run(store, "abc")
    _run(store, "abcd")
    assert store.resolve_run("abc").run_id == "abc"


def test_transaction_rolls_back(store: Store) -> None:
    w = _run(store, "r")
    with pytest.raises(RuntimeError), store.transaction():
        w.set_environment({"a": "1"})
        raise RuntimeError("boom")
    assert store.environment("r") == {}
    with store.transaction():
        w.set_environment({"a": "1", "b": "2"})
    assert store.environment("r") == {"a": "1", "b": "2"}


def test_commands_round_trip(store: Store) -> None:
    w = _run(store, "r")
    w.add_command(None, "pgknee", ["pgknee", "run", "--clients", "2,4"])
    w.add_command(7, "bench", ["pgbench", "--client=2"])
    assert store.commands("r") == [(None, "pgknee", ["pgknee", "run", "--clients", "2,4"]),
                                   (7, "bench", ["pgbench", "--client=2"])]


# ---- the article's SQL against the store ----------------------------------------------------------


def _activity(run_id: str, step_id: int, at: str, phase: str, state: str | None,
              wtype: str | None, wevent: str | None, backend: str = "client backend") -> tuple[object, ...]:
    row = dict.fromkeys(ACTIVITY_COLUMNS)
    row.update(state=state, wait_event_type=wtype, wait_event=wevent, backend_type=backend, pid=1000)
    return (run_id, step_id, at, phase, *row.values())


def _fill_activity(store: Store) -> None:
    _run(store, "r1")
    _run(store, "r2")
    t1, t2, t3, t4 = (f"2025-01-01 00:00:0{i}.000" for i in range(1, 5))
    rows = [
        _activity("r1", 1, t1, "bench", "active", None, None),
        _activity("r1", 1, t1, "bench", "active", None, None),
        _activity("r1", 1, t1, "bench", "active", "LWLock", "WALWrite"),
        _activity("r1", 1, t2, "bench", "active", None, None),
        _activity("r1", 1, t2, "bench", "idle in transaction", "Client", "ClientRead"),
        _activity("r1", 1, t3, "bench", "active", "Lock", "transactionid"),
        _activity("r1", 1, t3, "bench", "active", "Lock", "transactionid"),
        _activity("r1", 1, t4, "post", "active", None, None),  # another phase
        _activity("r2", 2, t1, "bench", "active", None, None),  # another run
    ]
    store.db.executemany(load("insert_activity"), rows)  # the writer's own statements
    # four bench snapshots of step 1: t4's bench snapshot found nobody active
    snaps = [("r1", 1, t, "bench", 1.0 + i, 5, 3, 2, 0, 0.4) for i, t in enumerate((t1, t2, t3))]
    snaps.append(("r1", 1, "2025-01-01 00:00:05.000", "bench", 5.0, 5, 3, 0, 0, 0.4))
    store.db.executemany(load("insert_snapshots"), snaps)


def test_article_wait_profile_sql_runs_unchanged(store: Store) -> None:
    _fill_activity(store)
    rows = store.db.execute(ARTICLE_SQL, ("r1",)).fetchall()
    assert rows[0] == ("CPU", "running", 3, 2)
    assert sorted(rows[1:]) == [("LWLock", "WALWrite", 1, 1), ("Lock", "transactionid", 2, 1)]
    # the article's AAS (count / snapshots where seen) vs the correct one (count / all 4 snapshots)
    n = store.snapshot_count([1], ["bench"])
    assert n == 4
    correct = {(r.wait_event_type, r.wait_event): r.aas for r in wait_profile([(t, e, c) for t, e, c, _ in rows], n)}
    article = {(t, e): article_aas(c, seen) for t, e, c, seen in rows}
    assert article[("Lock", "transactionid")] == 2.0 and correct[("Lock", "transactionid")] == 0.5
    assert article[("CPU", "running")] == 1.5 and correct[("CPU", "running")] == 0.75
    assert all(article[k] > correct[k] for k in article)


def test_wait_counts_client_backends(store: Store) -> None:
    _fill_activity(store)
    assert store.wait_counts([1], ["bench"], "client") == [
        ("CPU", "running", 3), ("Lock", "transactionid", 2), ("LWLock", "WALWrite", 1)]
    assert store.wait_counts([1], ["post"], "client") == [("CPU", "running", 1)]
    assert store.wait_counts([], ["bench"], "client") == []
    assert store.snapshot_stats([1], ["bench"]) == (4, 3.0, pytest.approx(0.4))
    assert store.snapshot_stats([99], ["bench"]) == (0, 0.0, 0.0)


def test_load_run_round_trip(store: Store) -> None:
    w = _run(store, "r", steps=2)
    os_row = ("2025-01-01 00:00:01.000", "bench", 1.0, 50.0, 0.0, 10.0, 0.0, 0.0, 0.0, 40.0, 1.5, 900.0, 3, 0,
              8000, 4000, 1000, 2000, 25.0, 40.0)
    assert len(os_row) == len(OS_COLUMNS)
    transfer = ScriptResult(0, "transfer", 60, 1000, 0, 0, 100.0, LatencyStats(1000, 20.0, 2.0, 1.0, 19.0, 30.0, 40.0,
                                                                             90.0))
    sids = [_step(w, 1, 2), _step(w, 2, 8)]
    w.write_step(_result(sids[0], "completed", tps=100.0, transactions=1000, lat_avg_ms=20.0, scripts=(transfer,),
                         pg_delta={"xact_commit": 1002.0}, os_rows=(os_row,)))
    w.write_step(_result(sids[1], "completed", tps=300.0, transactions=3000, lat_avg_ms=1000 * 8 / 300.0,
                         failures={"serialization": 3}))
    w.set_environment({"host.cpus": "4"})
    data = load_run(store, "last")
    assert [s.clients for s in data.steps] == [2, 8]
    (script,) = data.scripts[sids[0]]
    assert (script.script_no, script.script, script.weight, script.transactions) == (0, "transfer", 60, 1000)
    assert (script.failed, script.retried, script.tps, script.lat_avg_ms, script.lat_p99_ms) == (
        0, 0, 100.0, 20.0, 40.0)
    assert data.failures[sids[1]] == {"serialization": 3}
    assert data.pgdb[sids[0]] == {"xact_commit": 1002.0}
    (sample,) = data.os[sids[0]]
    assert (sample.phase, sample.cpu_user, sample.cpu_idle, sample.client_cpu_pct, sample.pooler_cpu_pct) == (
        "bench", 50.0, 40.0, 25.0, 40.0)
    assert data.env == {"host.cpus": "4"}
    view = build(data)
    assert [g.tps.value if g.tps else None for g in view.groups] == [100.0, 300.0]
