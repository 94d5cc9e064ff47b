from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgknee.analyze.run import build
from pgknee.analyze.waits import article_aas, wait_profile
from pgknee.collect.activity import ACTIVITY_COLUMNS
from pgknee.collect.osproc import OS_COLUMNS
from pgknee.errors import StoreError
from pgknee.store import db as db_mod
from pgknee.store import writer as writer_mod
from pgknee.store.db import SCHEMA_VERSION, Store, load_run
from pgknee.store.migrate import APPLICATION_ID, migrations, split_sql
from pgknee.store.sql import load
from pgknee.store.writer import RunWriter
from pgknee.types import (
    LatencyStats,
    PgbenchSummary,
    ScriptResult,
    StepMeasurement,
    StepResult,
)

# the article's wait-profile query (000, section 7), verbatim
ARTICLE_SQL = """
SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*), COUNT(DISTINCT _collected_at)
FROM snap_pg_stat_activity
WHERE _run_id = ? AND _phase IN ('bench') AND state = 'active'
GROUP BY 1, 2
ORDER BY 3 DESC
LIMIT 20
"""


@pytest.fixture(autouse=True)
def _own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Side files that go to pgknee's state directory go to the test's."""
    monkeypatch.setenv("PGKNEE_STATE_DIR", str(tmp_path / "state"))


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
    con = sqlite3.connect(path)  # a newer pgknee marks its stores as this one does
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.execute("CREATE TABLE runs (run_id TEXT)")
    con.close()
    before = path.read_bytes()
    for create in (True, False):
        with pytest.raises(StoreError) as ei:
            Store(path, create=create)
        assert "newer pgknee" in ei.value.message
        assert f"format {SCHEMA_VERSION + 1}" in ei.value.message
        assert ei.value.exit_code == 5
    assert path.read_bytes() == before  # not downgraded or touched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["future.db"]


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
    for create in (True, False):
        with pytest.raises(StoreError) as ei:
            Store(path, create=create)
        assert ei.value.message == f"the collector database {path} is not a pgknee store: it is not an SQLite " \
                                   "file; pgknee leaves it as it is"
        assert ei.value.exit_code == 5
    assert path.read_bytes() == b"this is not an SQLite file at all, just some text " * 100


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


# ---- what a file is, before pgknee changes anything ------------------------------------------------


def _old_store(path: Path, version: int, *, wal: bool = True) -> None:
    """A store as a pgknee of format `version` left it (before the application_id), with a run."""
    db = sqlite3.connect(path, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode = WAL")
    for v, text in migrations():
        if v > version:
            break
        for stmt in split_sql(text):
            db.execute(stmt)
        db.execute(f"PRAGMA user_version = {v}")
    db.execute("INSERT INTO runs (run_id, created_at, status, workload, target_kind, target_label, plan_json, "
               "steps_planned) VALUES ('r-old', '2024-01-01 00:00:00.000', 'completed', 'ewallet', 'embedded', 'x', "
               "'{\"clients\": [2], \"reps\": 1}', 1)")
    db.close()


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_a_new_store_is_marked_as_pgknees(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID == 0x70676B6E


def test_an_unmarked_store_is_read_as_it_is_and_marked_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _old_store(path, SCHEMA_VERSION)  # this format, made before stores were marked
    before = _files(tmp_path)
    s = Store(path, create=False)
    assert [r.run_id for r in s.runs()] == ["r-old"] and s.migrated_from is None
    s.close()
    assert _files(tmp_path) == before
    Store(path).close()
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID


def _foreign_marked(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE runs (run_id TEXT)")  # pgknee's names do not make it pgknee's
    db.execute("CREATE TABLE steps (step_id INTEGER)")
    db.close()


def _foreign_tables(path: Path, *, wal: bool) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    db.execute("INSERT INTO notes (body) VALUES ('mine')")
    db.close()


def _unversioned_lookalike(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (run_id TEXT)")
    db.execute("CREATE TABLE steps (step_id INTEGER)")
    db.close()


@pytest.mark.parametrize(("make", "why"), [
    (_foreign_marked, "its SQLite application_id is 0x4d2, another program's"),
    (lambda p: _foreign_tables(p, wal=False), "an SQLite database without pgknee's tables (runs, steps)"),
    (lambda p: _foreign_tables(p, wal=True), "an SQLite database without pgknee's tables (runs, steps)"),
    (_unversioned_lookalike, "an SQLite database without pgknee's tables (runs, steps)"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 4000), None),
], ids=["another-application-id", "another-program", "another-program-wal", "lookalike", "damaged"])
@pytest.mark.parametrize("create", [True, False], ids=["write", "read"])
def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path, make: Any, why: str | None,
                                                              create: bool) -> None:
    path = tmp_path / "other.db"
    make(path)
    before = _files(tmp_path)
    with pytest.raises(StoreError) as ei:
        Store(path, create=create)
    if why is not None:
        assert ei.value.message == f"the collector database {path} is not a pgknee store: {why}; pgknee leaves it " \
                                   "as it is"
    else:
        assert ei.value.message.startswith(f"the collector database {path} is damaged or not an SQLite file")
    assert ei.value.exit_code == 5
    assert _files(tmp_path) == before  # the same files, byte for byte: nothing made beside it either


@pytest.mark.parametrize("copy_max", [64 << 20, 0], ids=["in-memory", "temporary-file"])
def test_an_older_store_is_read_through_an_upgraded_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         copy_max: int) -> None:
    path = tmp_path / "old.db"
    _old_store(path, 7)
    before = _files(tmp_path)
    monkeypatch.setattr(db_mod, "MEMORY_COPY_MAX", copy_max)
    s = Store(path, create=False)
    assert s.migrated_from == 7
    assert s.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # the copy
    (run,) = s.runs()
    assert (run.run_id, run.status, run.owner) == ("r-old", "completed", None)  # read through format 8's columns
    s.close()
    assert _files(tmp_path) == before


def test_two_processes_migrate_an_old_store_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_store(path, 6)
    db = sqlite3.connect(path, isolation_level=None)  # migration 7 updates every step: count the updates
    db.execute("INSERT INTO steps (run_id, seq, variant, clients, rep, threads, protocol, duration_s, warmup_s, "
               "status, started_at) VALUES ('r-old', 1, 'base', 2, 1, 1, 'prepared', 1, 0, 'completed', 'x')")
    db.execute("CREATE TABLE updates (n INTEGER)")
    db.execute("CREATE TRIGGER counted AFTER UPDATE ON steps BEGIN INSERT INTO updates VALUES (1); END")
    db.execute("BEGIN IMMEDIATE")  # both wait for this lock, then race for the migrations
    code = "import sys; from pgknee.store.db import Store; Store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    time.sleep(1.5)
    db.execute("ROLLBACK")
    db.close()
    results = [(p.communicate(timeout=60)[1], p.returncode) for p in procs]
    assert results == [("", 0), ("", 0)]
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert db.execute("SELECT count(*) FROM updates").fetchone()[0] == 1  # migration 7 ran once
        assert db.execute("SELECT run_id, owner FROM runs").fetchall() == [("r-old", None)]
    finally:
        db.close()
