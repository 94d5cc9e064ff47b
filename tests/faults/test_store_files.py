"""The store as a file: another program's SQLite file, a store on a read-only file system, a
store another process holds locked, a store an older pgknee wrote. Real pgknee processes; a
store measured by a real sweep against the session's "user's server"."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pgknee.store.migrate import SCHEMA_VERSION
from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    SCALE,
    assert_nothing_left,
    dsn_of,
    one_error_line,
    remount_read_only,
    run,
    sql,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.fixture(scope="module")
def measured(server: EmbeddedCluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one completed run (clients 2 and 4) of a real sweep; (store, its server's DSN)."""
    d = tmp_path_factory.mktemp("measured")
    (d / "state").mkdir(mode=0o700)
    r = run("run", "--dsn", dsn_of(server), "--clients", "2,4", "--duration", "1s", "--scale", SCALE, "--schema",
            "faults_files", "--store", str(d / "m.db"), state=d / "state", cwd=d)
    assert r.code == 0, r.err
    return d / "m.db", dsn_of(server)


def _copy(store: Path, to: Path) -> Path:
    shutil.copyfile(store, to)
    return to


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def _foreign(path: Path, *, wal: bool) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total NUMERIC)")
    db.execute("INSERT INTO invoices (total) VALUES (12.5), (99)")
    db.close()


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_another_programs_sqlite_file_is_refused_and_left_alone(measured: tuple[Path, str], tmp_path: Path,
                                                                state: Path, wal: bool) -> None:
    _, dsn = measured
    work = tmp_path / "work"
    work.mkdir()
    other = work / "invoices.db"
    _foreign(other, wal=wal)
    before, dirs = _files(work), tmp_pgknee_dirs()
    line = (f"pgknee: error: the collector database {other} is not a pgknee store: an SQLite database without "
            "pgknee's tables (runs, steps); pgknee leaves it as it is (give --store a pgknee store, or the name of "
            "a new file)")
    pids = []
    for argv in (["run", "--dsn", dsn, "--clients", "2", "--duration", "1s"], ["runs"], ["show", "last"],
                 ["report", "last", "-o", str(tmp_path / "r.html")], ["store", "upgrade"]):
        p = start(*argv, "--store", str(other), state=state, cwd=tmp_path)
        out, err = p.communicate(timeout=120)
        pids.append(p.pid)
        assert (p.returncode, one_error_line(err), out) == (5, line, ""), argv
    assert _files(work) == before  # byte for byte, and nothing made beside it
    assert not (tmp_path / "r.html").exists()
    assert_nothing_left(state, pids, dirs)


def test_a_store_on_a_read_only_file_system(measured: tuple[Path, str], tmpfs: Callable[[int], Path],
                                           tmp_path: Path, state: Path) -> None:
    store, dsn = measured
    fs = tmpfs(2048)
    ro = _copy(store, fs / "m.db")
    run_id = str(sql(store, "SELECT run_id FROM runs")[0][0])
    remount_read_only(fs)
    before, dirs = _files(fs), tmp_pgknee_dirs()
    listed = run("runs", "--store", str(ro), state=state, cwd=tmp_path)
    assert (listed.code, listed.err) == (0, "") and run_id in listed.out  # reads work
    shown = run("show", "last", "--store", str(ro), state=state, cwd=tmp_path)
    assert shown.code == 0 and "completed  (2/2 steps)" in shown.out
    refused = run("run", "--dsn", dsn, "--clients", "2", "--duration", "1s", "--store", str(ro), state=state,
                  cwd=tmp_path)
    assert refused.code == 5
    assert one_error_line(refused.err) == (
        f"pgknee: error: the collector database {ro} is read-only: it is on a read-only file system (make it "
        "writable, or give --store another path (show, runs and the other read commands still read it))")
    upgrade = run("store", "upgrade", "--store", str(ro), state=state, cwd=tmp_path)
    assert upgrade.code == 5 and "is read-only: it is on a read-only file system" in one_error_line(upgrade.err)
    assert _files(fs) == before
    assert_nothing_left(state, [], dirs)


def test_a_store_another_process_holds_locked(measured: tuple[Path, str], tmp_path: Path, state: Path) -> None:
    store, dsn = measured
    s = _copy(store, tmp_path / "s.db")
    holder = sqlite3.connect(s, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers wait too
    holder.execute("BEGIN EXCLUSIVE")
    dirs = tmp_pgknee_dirs()
    try:
        for argv in (["run", "--dsn", dsn, "--clients", "2", "--duration", "1s"], ["show", "last"]):
            t0 = time.monotonic()
            r = run(*argv, "--store", str(s), state=state, cwd=tmp_path, PGKNEE_STORE_TIMEOUT="1.5s")
            assert time.monotonic() - t0 >= 1.5
            assert r.code == 7, r.err
            assert one_error_line(r.err) == (
                f"pgknee: error: the collector database {s} is locked by another process after waiting 1.5 s "
                "(opening it) (let the other pgknee finish ('pgknee runs' lists what runs), or raise "
                "PGKNEE_STORE_TIMEOUT (e.g. 60s))")
    finally:
        holder.close()
    assert run("show", "last", "--store", str(s), state=state, cwd=tmp_path).code == 0  # free again
    assert_nothing_left(state, [], dirs)


def test_an_older_store_is_read_as_it_is_and_upgraded_on_request(measured: tuple[Path, str], tmp_path: Path,
                                                                 state: Path) -> None:
    store, _ = measured
    work = tmp_path / "work"
    work.mkdir()
    old = _copy(store, work / "old.db")
    db = sqlite3.connect(old, isolation_level=None)  # format 7: before runs had an owner, unmarked
    db.execute("ALTER TABLE runs DROP COLUMN owner")
    # formats 9 to 12: the server's /proc, the simulated round trip, pg_wait_sampling, the statement mix
    for table in ("server_os_samples", "step_wait_profile", "step_wait_sampling", "step_statements",
                  "workload_statements"):
        db.execute(f"DROP TABLE {table}")
    for column in ("rtt_ms", "rtt_jitter_ms"):
        db.execute(f"ALTER TABLE steps DROP COLUMN {column}")
    # formats 13 to 15: agents, the run's heartbeat, the backends hidden from the sampling role
    for table in ("step_agents", "agent_tasks", "agents"):
        db.execute(f"DROP TABLE {table}")
    db.execute("ALTER TABLE runs DROP COLUMN heartbeat_at")
    db.execute("ALTER TABLE snapshots DROP COLUMN hidden")
    for table in ("step_wal", "step_checkpoints", "step_io", "step_kcache"):  # format 16: the server side of a step
        db.execute(f"DROP TABLE {table}")
    db.execute("DROP TABLE pooler_process_samples")  # format 17: several pgbouncer processes
    db.execute("ALTER TABLE steps DROP COLUMN pool_processes")
    db.execute("PRAGMA user_version = 7")
    db.execute("PRAGMA application_id = 0")
    db.close()
    before = _files(work)
    for argv in (["runs"], ["show", "last"], ["report", "last", "-o", str(tmp_path / "r.html")]):
        r = run(*argv, "--store", str(old), state=state, cwd=tmp_path)
        assert r.code == 0, (argv, r.err)
    assert "completed  (2/2 steps)" in run("show", "last", "--store", str(old), state=state, cwd=tmp_path).out
    assert _files(work) == before  # read through a copy: the file is as the older pgknee left it
    up = run("store", "upgrade", "--store", str(old), state=state, cwd=tmp_path)
    assert (up.code, up.out, up.err) == (0, f"{old}: upgraded from format 7 to {SCHEMA_VERSION}\n", "")
    assert sql(old, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert sql(old, "PRAGMA application_id") == [(0x70676B6E,)]
    assert sql(old, "SELECT owner FROM runs") == [(None,)]


def test_a_refused_run_leaves_a_new_store_another_pgknee_opened_meanwhile(tmp_path: Path, state: Path) -> None:
    """Two pgknee started on one new store: the one refused before its run began removes the
    store it made, unless another process has it open by then (that one's run would be lost)."""
    store = tmp_path / "n.db"
    p = start("run", "--clients", "500", "--duration", "1s", "--store", str(store), state=state, cwd=tmp_path)
    assert wait_for(lambda: store.exists() and store.stat().st_size > 0, 60), "the store was never made"
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1]); "
                               "db.execute('SELECT count(*) FROM runs').fetchone(); print('open', flush=True); "
                               "time.sleep(60)", str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        _, err = p.communicate(timeout=120)
        assert p.returncode == 3 and "--set max_connections=" in err, err
        assert store.exists()  # the other process's store is left to it
        assert sql(store, "SELECT count(*) FROM runs") == [(0,)]
    finally:
        holder.kill()
        holder.communicate()
    # alone, the same refusal removes the store it made
    alone = tmp_path / "m.db"
    r = run("run", "--clients", "500", "--duration", "1s", "--store", str(alone), state=state, cwd=tmp_path)
    assert r.code == 3 and not alone.exists() and not Path(f"{alone}-wal").exists()
