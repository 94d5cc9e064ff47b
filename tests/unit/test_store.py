from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgknee.analyze.run import build
from pgknee.analyze.waits import article_aas, wait_profile
from pgknee.base.errors import DriverError, Interrupted, PgkneeError, StoreBusy, StoreError, UserError
from pgknee.collect.activity import ACTIVITY_COLUMNS
from pgknee.model.facts import ActivityGaps, MemoryAtEnd, StepFacts
from pgknee.model.kinds import columns_of
from pgknee.model.results import (
    LatencyStats,
    PgbenchSummary,
    ProgressPoint,
    Reopening,
    RunData,
    ScriptResult,
    StepMeasurement,
    StepResult,
)
from pgknee.model.samples import (
    ActivitySamples,
    OsSample,
    OsSamples,
    PoolerFacts,
    PoolerSample,
    PoolerSamples,
    SessionRow,
    WaitSampling,
)
from pgknee.model.server import CheckpointStep, DatabaseStep, IoStep, WalStep
from pgknee.store import claims, sidefile
from pgknee.store import db as db_mod
from pgknee.store import writer as writer_mod
from pgknee.store.db import SCHEMA_VERSION, Store
from pgknee.store.load import load_run
from pgknee.store.migrate import APPLICATION_ID, migrations, split_sql
from pgknee.store.sql import load
from pgknee.store.writer import RunWriter, import_side_file
from pgknee.system import proc, registry

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
            failures: dict[str, int] | None = None, database: DatabaseStep | None = None,
            os_rows: tuple[OsSample, ...] = ()) -> StepResult:
    lat = LatencyStats(transactions, lat_avg_ms, 0.0, lat_avg_ms, lat_avg_ms, lat_avg_ms, lat_avg_ms, lat_avg_ms)
    m = (StepMeasurement(transactions, 0, 0, 0, tps, lat, scripts, failures or {}) if tps is not None else None)
    return StepResult(step_id, status, reason, 0 if status == "completed" else 1, 0.0, 10.0, PgbenchSummary(), m,
                      None, (), StepFacts(), (*((database,) if database else ()), OsSamples(os_rows)))


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
    with pytest.raises(StoreError) as ei:
        w.write_step(_result(sid, "weird"))
    assert "refused a row (writing step 1): CHECK constraint failed" in ei.value.message
    assert ei.value.hint is not None and "a bug in pgknee" in ei.value.hint
    assert store.steps("r")[0].status == "running"  # the step's whole write was rolled back
    side = store.path.parent / f"{store.path.name}.r.step-1.json"  # and nothing measured is lost
    assert f"step 1's results are kept in {side}" in ei.value.message
    assert json.loads(side.read_text())["result"]["status"] == "weird"


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
    snaps = [("r1", 1, t, "bench", 1.0 + i, 5, 3, 2, 0, 0, 0.4) for i, t in enumerate((t1, t2, t3))]
    snaps.append(("r1", 1, "2025-01-01 00:00:05.000", "bench", 5.0, 5, 3, 0, 0, 0, 0.4))
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
    assert store.snapshot_stats([1], ["bench"]) == (4, 3.0, pytest.approx(0.4), 0.0)
    assert store.snapshot_stats([99], ["bench"]) == (0, 0.0, 0.0, None)


def test_load_run_round_trip(store: Store) -> None:
    w = _run(store, "r", steps=2)
    os_row = OsSample("bench", 1.0, 50.0, 0.0, 10.0, 0.0, 0.0, 0.0, 40.0, 1.5, 900.0, 3, 0,
              8000, 4000, 1000, 2000, 25.0, 40.0)
    # the sample's one shape is its table's columns after the ids and the time as text the store derives
    table = [str(r[1]) for r in store.db.execute("PRAGMA table_info(os_samples)").fetchall()]
    assert table == ["run_id", "step_id", "_collected_at", *columns_of(OsSample._fields)]
    transfer = ScriptResult(0, "transfer", 60, 1000, 0, 0, 100.0, LatencyStats(1000, 20.0, 2.0, 1.0, 19.0, 30.0, 40.0,
                                                                             90.0))
    sids = [_step(w, 1, 2), _step(w, 2, 8)]
    w.write_step(_result(sids[0], "completed", tps=100.0, transactions=1000, lat_avg_ms=20.0, scripts=(transfer,),
                         database=DatabaseStep(xact_commit=1002.0), os_rows=(os_row,)))
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
    assert data.database(sids[0]) == DatabaseStep(xact_commit=1002.0)
    (sample,) = data.client_os(sids[0])
    at = store.db.execute("SELECT _collected_at FROM os_samples").fetchall()
    assert at == [("1970-01-01 00:00:01.000+00:00",)]  # the sample's epoch 1.0, in UTC
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


# ---- a store that cannot take what is written --------------------------------------------------------


def _locked(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_locked_store_is_one_line_after_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      clock: None) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "300ms")
    path = tmp_path / "s.db"
    s = Store(path)
    holder = _locked(path)
    t0 = time.monotonic()
    with pytest.raises(StoreBusy) as ei:
        _run(s, "r")
    assert time.monotonic() - t0 >= 0.3
    assert ei.value.exit_code == 7
    assert ei.value.one_line() == (
        f"the collector database {path} is locked by another process after waiting 0.3 s (writing: create run) "
        "(let the other pgknee finish ('pgknee runs' lists what runs), or raise PGKNEE_STORE_TIMEOUT (e.g. 60s))")
    holder.close()
    s.close()


def test_a_bad_store_timeout_is_bad_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "soon")
    with pytest.raises(UserError, match="PGKNEE_STORE_TIMEOUT 'soon' is not a duration"):
        Store(tmp_path / "s.db")
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "30")  # a duration carries its unit
    with pytest.raises(UserError, match="PGKNEE_STORE_TIMEOUT '30' has no unit"):
        Store(tmp_path / "s.db")


def _full_result(step_id: int) -> StepResult:
    """A step with every kind of row a step can hand the writer."""
    lat = LatencyStats(1000, 20.0, 2.0, 1.0, 19.0, 30.0, 40.0, 90.0)
    script = ScriptResult(0, "transfer", 60, 1000, 1, 2, 100.0, lat)
    m = StepMeasurement(1000, 1, 2, 3, 100.0, lat, (script,), {"serialization": 1}, lag=lat, skipped=0)
    act_row = dict.fromkeys(ACTIVITY_COLUMNS)
    act_row.update(pid=4242, state="active", wait_event_type="Lock", wait_event="transactionid",
                   backend_type="client backend", query="SELECT 1", client_port=5432)
    at = "2025-01-01 00:00:01.000"
    activity = ActivitySamples(((at, "bench", 1.0, 5, 3, 2, 0, 0, 0.4),), ((at, "bench", *act_row.values()),),
                               ("one error",), interval_s=0.5, ticks_late=3)
    os_row = OsSample("bench", 1.0, 50.0, 0.0, 10.0, 0.0, 0.0, 0.0, 40.0, 1.5, 900.0, 3, 0, 8000, 4000, 1000, 2000,
              25.0, None)
    pooler = (PoolerSamples((PoolerSample("bench", 1.0, 2, 0, 2, 0, 2, 0, 0),)),
              PoolerFacts("managed", "1.21", settings=(("pool_mode", "transaction"),),
                          deltas=(("total_xact_count", 9.0),)))
    return StepResult(step_id, "completed", None, 0, 1.0, 11.0, PgbenchSummary(1000, 0, 99.5, 20.1, 3.0, 10.0), m,
                      101.0, (ProgressPoint(1.0, 99.0, 20.0, 2.0, 0),), StepFacts((MemoryAtEnd(pss_server_kb=1234.5),)),
                      (DatabaseStep(xact_commit=1002.0), activity, OsSamples((os_row,)), *pooler, WAIT_SAMPLING,
                       *SERVER))


WAIT_SAMPLING = WaitSampling(980, True, 10.1, 4, (("LWLock", "WALWrite", 1421), ("IO", "WALSync", 510)))
SERVER = (WalStep(10_000, 12, 800_000.0, 0, None, None, None, None),
          CheckpointStep("pg_stat_checkpointer", 0, 1, 1, 345, 80.0, 2.5, False, True),
          IoStep("client backend", "relation", "normal", 5, 0.0, 1, 0.0, 0, 2, 900, 0, 0, 0, 0.0, 40960.0, 8192.0),
          IoStep("checkpointer", "relation", "normal", 0, 0.0, 345, 70.0, 345, 0, 0, 0, 0, 3, 2.5, 0.0, 2826240.0))


def test_a_step_result_round_trips_through_json() -> None:
    r = _full_result(7)
    back = sidefile.result_from_json(json.loads(json.dumps(sidefile.result_to_json(r))))
    assert back == r
    activity, os_samples = back.of(ActivitySamples), back.of(OsSamples)
    assert activity is not None and os_samples is not None
    # each row typed again by its record's annotation, not a bare list or tuple
    assert isinstance(activity.rows[0], SessionRow) and activity.rows[0].wait_event == "transactionid"
    assert isinstance(os_samples.rows[0], OsSample) and os_samples.rows[0].client_cpu_pct == 25.0


def test_a_side_file_of_format_1_still_imports() -> None:
    """Written by the pgknee before each record carried its kind (tests/data/side_file_v1_result.json,
    _full_result(7) as that version wrote it): every record comes back, typed."""
    v1 = json.loads((Path(__file__).parent.parent / "data" / "side_file_v1_result.json").read_text())
    back, now = sidefile.result_from_json(v1), _full_result(7)
    for kind in (DatabaseStep, ActivitySamples, OsSamples, PoolerSamples, WaitSampling):
        assert back.of(kind) == now.of(kind), kind
    # (that file's pooler was told no settings)
    assert back.of(PoolerFacts) == dataclasses.replace(now.of(PoolerFacts), settings=())  # type: ignore[type-var]
    assert [r for r in back.records if isinstance(r, WalStep | CheckpointStep | IoStep)] == list(SERVER)
    assert back.facts == now.facts and back.measurement == now.measurement
    with pytest.raises(UserError, match="not one pgknee wrote"):
        sidefile.result_from_json({**v1, "records": [{"kind": "NoSuchRecord", "fields": {}}]})


def test_the_sampler_s_rate_and_late_ticks_are_step_facts(store: Store) -> None:
    w = _run(store, "r", steps=1)
    sid = _step(w, 1, 2)
    w.write_step(_full_result(sid))
    facts = load_run(store, "r").facts[sid]
    assert facts.of(ActivityGaps) == ActivityGaps(None, None, 0.5, 3)  # none lost, none reconnected: no fact
    assert dict(facts.items())["activity.interval_s"] == 0.5 and "activity.ticks_lost" not in dict(facts.items())


def test_pg_wait_sampling_s_profile_is_stored_per_step_and_read_back(store: Store) -> None:
    w = _run(store, "r", steps=2)
    sid, bare = _step(w, 1, 2), _step(w, 2, 2)
    w.write_step(_full_result(sid))
    full = _full_result(bare)
    w.write_step(dataclasses.replace(full, records=tuple(r for r in full.records if not isinstance(r, WaitSampling))))
    assert load_run(store, "r").of(sid, WaitSampling) == WAIT_SAMPLING


def _comparable(data: RunData) -> dict[str, Any]:
    (s,) = data.steps
    i = s.step_id
    return {"step": {k: getattr(s, k) for k in s.__slots__ if k not in ("step_id", "started_at")},
            "scripts": data.scripts[i], "failures": data.failures[i], "pgdb": data.database(i), "os": data.client_os(i),
            "waits": data.waits[i], "snaps": data.snaps[i], "pooler": data.pooler(i), "facts": data.facts.get(i),
            "progress": data.progress.get(i), "wait_sampling": data.of(i, WaitSampling)}


def test_a_step_the_store_cannot_take_goes_to_a_side_file_and_comes_back(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         clock: None) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "200ms")
    reference = Store(tmp_path / "reference.db")  # the same step, written as it should have been
    ref = _run(reference, "r", steps=1)
    ref.write_step(_full_result(_step(ref, 1, 2)))
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    sid = _step(w, 1, 2)
    holder = _locked(path)  # another process holds the store past the timeout
    with pytest.raises(StoreBusy) as ei:
        w.write_step(_full_result(sid))
    holder.close()
    side = tmp_path / "s.db.r.step-1.json"
    assert ei.value.message == (f"the collector database {path} is locked by another process after waiting 0.2 s "
                                f"(writing step 1); step 1's results are kept in {side}")
    assert ei.value.hint is not None and ei.value.hint.endswith(f"then load them with 'pgknee store import {side}'")
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert s.steps("r")[0].status == "running"
    assert import_side_file(s, sidefile.read(side)) == [f"step 1 (c2 rep 1) of run r stored in {path}"]
    assert _comparable(load_run(s, "r")) == _comparable(load_run(reference, "r"))
    with pytest.raises(UserError, match="step 1 of run r is already in"):
        import_side_file(s, sidefile.read(side))
    other = Store(tmp_path / "other.db")
    with pytest.raises(StoreError, match="run r is not in"):
        import_side_file(other, sidefile.read(side))
    for store in (s, reference, other):
        store.close()


def test_a_side_file_makes_the_step_row_a_store_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      clock: None) -> None:
    """A side file loaded into a copy of the store made before the step began."""
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "200ms")
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    s.close()
    copy = tmp_path / "copy.db"
    copy.write_bytes(path.read_bytes())
    s = Store(path)
    w = RunWriter(s, "r")
    sid = _step(w, 1, 2)
    holder = _locked(path)
    with pytest.raises(StoreBusy):
        w.write_step(_full_result(sid))
    holder.close()
    c = Store(copy)
    assert c.steps("r") == []
    import_side_file(c, sidefile.read(tmp_path / "s.db.r.step-1.json"))
    (step,) = c.steps("r")
    assert (step.seq, step.clients, step.status, step.tps) == (1, 2, "completed", 100.0)
    s.close()
    c.close()


def test_side_files_go_where_they_can(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s.db"
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.setenv("PGKNEE_SIDE_DIR", str(mine))
    monkeypatch.setenv("PGKNEE_STATE_DIR", str(tmp_path / "state"))
    assert sidefile.write({"a": 1}, store, "n.json", disk_full=False) == (tmp_path / "n.json", [])
    assert sidefile.write({"a": 1}, store, "n.json", disk_full=False)[0] == tmp_path / "n-2.json"  # never over one
    assert sidefile.write({"a": 1}, store, "n.json", disk_full=True) == (mine / "n.json", [])  # not on the full disk
    monkeypatch.setenv("PGKNEE_SIDE_DIR", str(tmp_path / "missing"))
    path, tried = sidefile.write({"a": 1}, store, "n.json", disk_full=True)
    assert path == tmp_path / "state" / "side" / "n.json"
    assert tried == [f"{tmp_path / 'missing'}: No such file or directory"]
    assert sidefile.read(path)["a"] == 1
    assert sorted(p.name for p in (tmp_path / "state" / "side").iterdir()) == ["n.json"]  # no temporary left


def test_reading_never_writes(tmp_path: Path, clock: None) -> None:
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r")
    w.write_step(_result(_step(w, 1, 2), "completed", tps=10.0, transactions=100))
    s.close()
    before = _files(tmp_path)
    reader = Store(path, create=False)
    assert load_run(reader, "r").steps[0].tps == 10.0
    with pytest.raises(StoreError) as ei:
        RunWriter(reader, "r2").create_run(workload="ewallet", target_kind="embedded", target_label="x", plan={},
                                           steps_planned=1)
    assert ei.value.message == f"the collector database {path} is read-only (writing: create run)"
    reader.close()
    assert _files(tmp_path) == before


def _dead_owner() -> str:
    """The owner string of a pgknee that has exited (a real process, gone)."""
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                       check=True)
    return f"{socket.gethostname()}:{int(p.stdout)}:1"


def test_when_the_run_s_end_cannot_be_written_either_it_is_kept_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    clock: None) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "200ms")
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    sid = _step(w, 1, 2)
    holder = _locked(path)
    try:
        w.write_step(_full_result(sid))
    except StoreBusy as e:  # the orchestrator: the run ends with the step's error in flight
        w.end_run("failed", e.message)
        seen = e.one_line()
    holder.close()
    side = tmp_path / "s.db.r.step-1.json"
    # the line the user sees names where the step went and where the run's end went
    assert f"step 1's results are kept in {side}; the store could not take how the run ended either" in seen
    assert seen.endswith(f"how the run ended is kept in {side} too (let the other pgknee finish ('pgknee runs' lists "
                         "what runs), or raise PGKNEE_STORE_TIMEOUT (e.g. 60s); then load them with 'pgknee store "
                         f"import {side}')"), seen
    doc = sidefile.read(side)
    assert doc["run_end"]["status"] == "failed"
    assert doc["run_end"]["reason"].endswith(f"(writing step 1); step 1's results are kept in {side}")
    assert s.resolve_run("r").status == "running"
    # this pgknee still holds the run: its end is not the side file's to write
    assert import_side_file(s, doc) == [f"step 1 (c2 rep 1) of run r stored in {path}",
                                        "run r is marked 'running' already: the side file's end of it is left out"]
    gone = _dead_owner()  # once the pgknee that wrote it is gone, the import marks the run
    s.db.execute("UPDATE runs SET owner = ? WHERE run_id = 'r'", (gone,))
    s.db.execute("UPDATE steps SET status = 'failed' WHERE run_id = 'r'")
    assert import_side_file(s, {**doc, "owner": gone})[1] == f"run r marked 'failed': {doc['run_end']['reason']}"
    run = s.resolve_run("r")
    assert (run.status, run.status_reason, run.finished_at) == ("failed", doc["run_end"]["reason"],
                                                                doc["run_end"]["finished_at"])
    s.close()


def test_a_run_s_end_alone_goes_to_a_side_file_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          clock: None) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "200ms")
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=0)
    holder = _locked(path)
    with pytest.raises(StoreBusy) as ei:
        w.end_run("completed", None)
    holder.close()
    side = tmp_path / "s.db.r.end.json"
    assert ei.value.message.endswith(f"(writing how the run ended); how the run ended is kept in {side} "
                                     f"('pgknee store import {side}' marks it)")
    assert sidefile.read(side)["run_end"]["status"] == "completed"
    s.close()


def test_room_is_kept_for_the_run_s_end(tmp_path: Path, clock: None) -> None:
    path = tmp_path / "s.db"
    s = Store(path)
    stale = tmp_path / f".s.db.pgknee-reserve.{_dead_owner().split(':')[1]}.1"  # a pgknee that died
    stale.write_bytes(b"x")
    w = _run(s, "r")
    (reserve,) = tmp_path.glob(".s.db.pgknee-reserve.*")
    assert reserve.name == f".s.db.pgknee-reserve.{os.getpid()}.{writer_mod.start_time(os.getpid())}"
    assert reserve.stat().st_size == writer_mod.RESERVE_BYTES
    w.end_run("completed", None)
    assert list(tmp_path.glob(".s.db.pgknee-reserve.*")) == []
    s.close()


# ---- --extend and --resume: who holds a run, and a failed extension ------------------------------------


def _extendable(store: Store) -> None:
    """A completed run of clients 2 and 4, as --extend finds it."""
    w = RunWriter(store, "r")
    w.create_run(workload="ewallet", target_kind="embedded", target_label="x", plan={"clients": [2, 4], "reps": 1},
                 steps_planned=2)
    w.set_environment({"host.cpus": "4", "server.version": "17.2"})
    w.add_command(None, "pgknee", ["pgknee", "run", "--clients", "2,4"])
    for seq, clients in ((1, 2), (2, 4)):
        sid = _step(w, seq, clients)
        w.add_command(sid, "bench", ["pgbench", f"--client={clients}"])
        w.write_step(_full_result(sid))
    w.end_run("completed", None)


def _dump(store: Store, run_id: str) -> dict[str, Any]:
    q = store.db.execute
    ids = [r[0] for r in q("SELECT step_id FROM steps WHERE run_id = ?", (run_id,))]
    out: dict[str, Any] = {"runs": q("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchall(),
                           "env": dict(q("SELECT key, value FROM run_environment WHERE run_id = ?", (run_id,))),
                           "commands": q("SELECT * FROM run_commands WHERE run_id = ? ORDER BY id",
                                         (run_id,)).fetchall(),
                           "steps": q("SELECT * FROM steps WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()}
    for table, column in (("step_scripts", "step_id"), ("step_progress", "step_id"), ("snapshots", "step_id"),
                          ("snap_pg_stat_activity", "_step_id"), ("os_samples", "step_id"),
                          ("pooler_samples", "step_id"), ("step_pooler", "step_id"), ("step_facts", "step_id"),
                          ("step_failures", "step_id"), ("step_pg_stat_database", "step_id")):
        out[table] = q(f"SELECT * FROM {table} WHERE {column} IN ({', '.join('?' * len(ids))}) ORDER BY 1, 2",
                       ids).fetchall()
    return out


EXTENDED = {"clients": [2, 4, 8, 16], "reps": 1}


def _reading(store: Store, plan: dict[str, Any], run_id: str = "r") -> Reopening:
    """The run reopened as the CLI does it: under `plan`, as it reads now."""
    done = store.db.execute("SELECT count(*) FROM steps WHERE run_id = ? AND status = 'completed'", (run_id,))
    return Reopening(run_id, plan, store.resolve_run(run_id).plan, done.fetchone()[0])


def _extension(store: Store) -> RunWriter:
    """--extend r --clients 8,16 under way: its session's environment and commands written."""
    x = RunWriter(store, "r")
    assert x.extend_run(_reading(store, EXTENDED), more_steps=2) == 2
    x.set_environment({"host.cpus": "8", "extended.20250101-000000": "clients 8,16 added on a new embedded server"})
    x.add_command(None, "pgknee", ["pgknee", "run", "--extend", "r", "--clients", "8,16"])
    return x


def _ends_with(x: RunWriter, error: PgkneeError, status: str) -> None:
    """The orchestrator's finally, with `error` in flight."""
    try:
        raise error
    except PgkneeError as e:
        x.end_run(status, e.message)


def test_a_failed_extension_leaves_the_run_as_it_was(store: Store) -> None:
    _extendable(store)
    before = _dump(store, "r")
    x = _extension(store)
    sid = _step(x, 3, 8)
    x.add_command(sid, "bench", ["pgbench", "--client=8"])
    x.write_step(_result(sid, "failed", "pgbench exit 1: boom", tps=1.0, transactions=3))
    _ends_with(x, DriverError("pgbench failed at 8 clients: boom"), "failed")
    after = _dump(store, "r")
    note = after["env"].pop("extended.20250101-000000")
    assert after == before
    assert note == "clients 8,16 added on a new embedded server: failed: pgbench failed at 8 clients: boom; " \
                   "nothing kept"


def test_a_failed_extension_keeps_the_steps_it_completed(store: Store) -> None:
    _extendable(store)
    before = _dump(store, "r")
    x = _extension(store)
    for seq, clients in ((3, 8), (4, 16)):
        sid = _step(x, seq, clients)
        x.add_command(sid, "bench", ["pgbench", f"--client={clients}"])
    x.write_step(_full_result(store.steps("r")[2].step_id))
    _ends_with(x, Interrupted("interrupted by SIGTERM"), "interrupted")
    run = store.resolve_run("r")
    was = before["runs"][0]
    assert (run.status, run.status_reason, run.finished_at) == (was[3], was[4], was[2]) == ("completed", None,
                                                                                            run.finished_at)
    assert (run.plan["clients"], run.steps_planned, run.owner) == ([2, 4, 8], 3, claims.owner())
    assert [(s.seq, s.clients, s.status) for s in store.steps("r")] == [(1, 2, "completed"), (2, 4, "completed"),
                                                                         (3, 8, "completed")]
    assert [c[1:] for c in store.commands("r")] == [("pgknee", ["pgknee", "run", "--clients", "2,4"]),
                                                    ("bench", ["pgbench", "--client=2"]),
                                                    ("bench", ["pgbench", "--client=4"]),
                                                    ("pgknee", ["pgknee", "run", "--extend", "r", "--clients", "8,16"]),
                                                    ("bench", ["pgbench", "--client=8"])]
    env = store.environment("r")
    assert env["host.cpus"] == "8"  # the kept steps' machine
    assert env["extended.20250101-000000"] == ("clients 8,16 added on a new embedded server: interrupted: interrupted "
                                               "by SIGTERM; kept the completed steps of clients 8")
    gone = store.db.execute("SELECT count(*) FROM snapshots WHERE step_id NOT IN (SELECT step_id FROM steps)")
    assert gone.fetchone()[0] == 0


def test_a_run_held_by_a_live_pgknee_is_not_reopened(store: Store) -> None:
    _extendable(store)
    _extension(store)  # this process holds it now
    again = RunWriter(store, "r")
    for more in (1, 0):  # --extend, --resume
        with pytest.raises(StoreBusy) as ei:
            again.extend_run(_reading(store, EXTENDED), more_steps=more)
        assert ei.value.message == f"run r is being written by another pgknee (pid {os.getpid()} on " \
                                   f"{socket.gethostname()})"
        assert ei.value.exit_code == 7
    assert again.recorded is False
    assert store.resolve_run("r").steps_planned == 4


def test_a_run_left_running_by_a_dead_pgknee_is_taken_over_by_resume(store: Store) -> None:
    _extendable(store)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    gone = f"{socket.gethostname()}:{int(dead.stdout)}:1"  # a pgknee that has exited
    store.db.execute("UPDATE runs SET status = 'running', owner = ? WHERE run_id = 'r'", (gone,))
    with pytest.raises(UserError, match="was left 'running' by a pgknee that is gone: it cannot be extended"):
        RunWriter(store, "r").extend_run(_reading(store, EXTENDED), more_steps=2)
    resumed = RunWriter(store, "r")
    assert resumed.extend_run(_reading(store, {"clients": [2, 4], "reps": 1}), more_steps=0) == 2
    assert store.resolve_run("r").owner == claims.owner()


# ---- a thread's exception --------------------------------------------------------------------------


def test_a_thread_failure_fails_a_run_that_would_have_completed(store: Store, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pgknee.cli import _thread_failed

    monkeypatch.setattr(threading, "excepthook", _thread_failed)
    w = _run(store, "r")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"x" * 200)
    t = threading.Thread(target=lambda: Store(junk, create=False), name="pgknee-activity")
    t.start()
    t.join()
    with pytest.raises(StoreError) as ei:
        w.end_run("completed", None)
    assert ei.value.message == (f"the pgknee-activity thread failed: the collector database {junk} is not a pgknee "
                                "store: it is not an SQLite file; pgknee leaves it as it is")
    run = store.resolve_run("r")
    assert (run.status, run.status_reason) == ("failed", ei.value.message)


def _other_process_reads(path: Path, q: str) -> object:
    """What another process sees, on a connection it opens and closes (as 'pgknee show' would)."""
    out = subprocess.run([sys.executable, "-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
                          "print(db.execute(sys.argv[2]).fetchone()[0]); db.close()", str(path), q],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


@pytest.mark.parametrize("second", ["writer", "reader"])
def test_a_second_store_in_the_process_keeps_the_writers_locks(tmp_path: Path, second: str) -> None:
    """The sampler's thread opens the store a second time while the run's writer has it open (and
    a read command may too). Opening it must not read the file outside SQLite: closing that
    descriptor dropped the writer's POSIX locks, another process's reader then took itself for
    the last connection and deleted the -wal being written, and no step written after it was
    visible (or would survive a crash)."""
    path = tmp_path / "s.db"
    store = Store(path)
    w = _run(store, "r1")
    Store(path, create=second == "reader").close()
    assert _other_process_reads(path, "SELECT count(*) FROM runs") == "1"
    assert Path(f"{path}-wal").exists()
    w.finish_run("completed", None)
    assert _other_process_reads(path, "SELECT status FROM runs") == "completed"
    store.close()


def _signal_during_a_held_lock(path: Path, hold_s: float) -> sqlite3.Connection:
    """Another connection holds the store's write lock for `hold_s` (0: until closed), and a
    SIGINT reaches this process 0.2 s into the wait."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    if hold_s:
        threading.Timer(hold_s, holder.close).start()
    return holder


def test_ctrl_c_while_a_step_is_written_waits_for_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            clock: None) -> None:
    """The step is measured: a Ctrl-C that comes while its results wait for the store's lock is
    handled once they are written (before, it cut the transaction and the step was lost)."""
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "5s")
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    sid = _step(w, 1, 2)
    _signal_during_a_held_lock(path, 0.8)
    with pytest.raises(Interrupted, match="SIGINT"), \
            proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))), proc.deferred():
        w.write_step(_full_result(sid))
    assert s.db.execute("SELECT status, transactions FROM steps WHERE step_id = ?", (sid,)).fetchone() \
        == ("completed", _full_result(sid).measurement.transactions)  # type: ignore[union-attr]  # it has one
    assert not list(tmp_path.glob("*.json"))
    s.close()


def test_ctrl_c_while_a_step_goes_to_a_side_file_leaves_the_line_that_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: None) -> None:
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "500ms")
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    sid = _step(w, 1, 2)
    holder = _signal_during_a_held_lock(path, 0)
    with pytest.raises(StoreBusy, match="step 1's results are kept in"), \
            proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))), proc.deferred():
        w.write_step(_full_result(sid))
    holder.close()
    doc = sidefile.read(tmp_path / "s.db.r.step-1.json")
    assert doc["result"]["measurement"]["transactions"] == _full_result(sid).measurement.transactions  # type: ignore[union-attr]  # it has one
    s.close()


def test_a_dead_pgknees_cleanup_leaves_a_run_another_pgknee_took_over(tmp_path: Path) -> None:
    """pgknee A died; while its watchdog still stops A's server, pgknee B resumes the run (and
    becomes its owner). A's cleanup must not mark B's live run abandoned, nor B's running step."""
    path = tmp_path / "s.db"
    s = Store(path)
    w = _run(s, "r", steps=1)
    _step(w, 1, 2)
    dead = f"{socket.gethostname()}:1:1"
    assert not registry.mark_abandoned(str(path), "r", "pgknee (pid 1) died", dead)
    assert s.db.execute("SELECT status FROM runs").fetchone() == ("running",)
    assert s.db.execute("SELECT status FROM steps").fetchone() == ("running",)
    assert registry.mark_abandoned(str(path), "r", "pgknee died", claims.owner())  # its own owner's: marked
    assert s.db.execute("SELECT status FROM runs").fetchone() == ("abandoned",)
    assert s.db.execute("SELECT status FROM steps").fetchone() == ("interrupted",)
    s.close()


def test_a_run_that_changed_since_it_was_read_is_not_reopened(store: Store) -> None:
    """Two --extend (or --resume) of one run started together: the second read the run before the
    first claimed it. When it claims the run in turn, the run is no longer as it read it (another
    plan, more completed steps): it is refused rather than writing its stale plan over the first's
    or running again the steps the first ran."""
    _extendable(store)
    read_before = _reading(store, EXTENDED)  # B reads the run
    first = _extension(store)  # A claims it, runs a step, and ends
    sid = _step(first, 3, 8)
    first.write_step(_full_result(sid))
    first.end_run("completed", None)
    for more in (2, 0):
        with pytest.raises(StoreBusy) as ei:
            RunWriter(store, "r").extend_run(read_before, more_steps=more)
        assert ei.value.one_line() == ("run r changed since pgknee read it: another pgknee extended or resumed it "
                                       "meanwhile (run the command again: it reads the run as it is now)")
        assert ei.value.exit_code == 7
    assert json.loads(store.db.execute("SELECT plan_json FROM runs").fetchone()[0]) == EXTENDED
