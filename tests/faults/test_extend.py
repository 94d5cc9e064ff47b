"""--extend and --resume against faults, with real pgknee processes and the session's "user's
server": two pgknee processes extending one run (the second is refused, naming the first), an
--extend that fails (the run is left as it was, but for the steps the extension completed), and
a run whose pgknee and watchdog were killed, taken over by --resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import time
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    RUN_TMP,
    SCALE,
    assert_nothing_left,
    dsn_of,
    one_error_line,
    run,
    sql,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.fixture(scope="module")
def completed(server: EmbeddedCluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A completed run of clients 2 and 4 (store, run id, DSN), copied by each test."""
    d = tmp_path_factory.mktemp("completed")
    (d / "state").mkdir(mode=0o700)
    r = run("run", "--dsn", dsn_of(server), "--clients", "2,4", "--duration", "2s", "--scale", SCALE, "--schema",
            "faults_extend", "--store", str(d / "c.db"), state=d / "state", cwd=d)
    assert r.code == 0, r.err
    return d / "c.db", str(sql(d / "c.db", "SELECT run_id FROM runs")[0][0]), dsn_of(server)


def _copy(completed: tuple[Path, str, str], tmp_path: Path) -> Path:
    return Path(shutil.copyfile(completed[0], tmp_path / "s.db"))


def _dump(store: Path, run_id: str) -> dict[str, object]:
    """Everything the store holds of a run, table by table."""
    db = sqlite3.connect(store)
    try:
        ids = [r[0] for r in db.execute("SELECT step_id FROM steps WHERE run_id = ?", (run_id,))]
        marks = ", ".join("?" * len(ids))
        out: dict[str, object] = {
            "runs": db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchall(),
            "env": dict(db.execute("SELECT key, value FROM run_environment WHERE run_id = ?", (run_id,))),
            "commands": db.execute("SELECT * FROM run_commands WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()}
        for table, column in (("steps", "step_id"), ("step_scripts", "step_id"), ("snapshots", "step_id"),
                              ("snap_pg_stat_activity", "_step_id"), ("os_samples", "step_id"),
                              ("step_progress", "step_id"), ("step_pg_stat_database", "step_id")):
            out[table] = db.execute(f"SELECT * FROM {table} WHERE {column} IN ({marks}) ORDER BY 1, 2",
                                    ids).fetchall()
        return out
    finally:
        db.close()


def test_a_second_pgknee_extending_the_run_is_refused(completed: tuple[Path, str, str], tmp_path: Path,
                                                     state: Path) -> None:
    store = _copy(completed, tmp_path)
    run_id, dsn = completed[1], completed[2]
    dirs = tmp_pgknee_dirs()
    # four steps of 2 s: time for the second and the resume to start while it runs (with two, a loaded
    # machine once had it finished before the resume looked: 'nothing to resume', 2, not 7)
    first = start("run", "--extend", run_id, "--clients", "6,8,10,12", "--dsn", dsn, "--store", str(store),
                  state=state, cwd=tmp_path)
    assert wait_for(lambda: sql(store, "SELECT status FROM runs") == [("running",)], 120), "the run was not reopened"
    second = run("run", "--extend", run_id, "--clients", "16", "--dsn", dsn, "--store", str(store), state=state,
                 cwd=tmp_path)
    assert second.code == 7
    assert one_error_line(second.err) == (
        f"pgknee: error: run {run_id} is being written by another pgknee (pid {first.pid} on {socket.gethostname()}) "
        "(wait until it ends ('pgknee runs' shows the run's status), or stop that pgknee first)")
    resumed = run("run", "--resume", run_id, "--dsn", dsn, "--store", str(store), state=state, cwd=tmp_path)
    assert resumed.code == 7 and f"(pid {first.pid} on {socket.gethostname()})" in one_error_line(resumed.err)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert sql(store, "SELECT clients, status FROM steps ORDER BY seq") == [
        (c, "completed") for c in (2, 4, 6, 8, 10, 12)]
    assert sql(store, "SELECT status, steps_planned FROM runs") == [("completed", 6)]
    assert json.loads(str(sql(store, "SELECT plan_json FROM runs")[0][0]))["clients"] == [2, 4, 6, 8, 10, 12]
    assert_nothing_left(state, [first.pid], dirs)


def test_two_pgknee_extending_the_run_at_once_one_is_refused(completed: tuple[Path, str, str], tmp_path: Path,
                                                            state: Path) -> None:
    """Started together, both pass the first look; the run is claimed in one write transaction."""
    store = _copy(completed, tmp_path)
    run_id, dsn = completed[1], completed[2]
    dirs = tmp_pgknee_dirs()
    procs = {c: start("run", "--extend", run_id, "--clients", c, "--dsn", dsn, "--store", str(store), state=state,
                      cwd=tmp_path) for c in ("8", "16")}
    ends = {c: (p.pid, *p.communicate(timeout=300), p.returncode) for c, p in procs.items()}
    won = [c for c, (_, _, _, rc) in ends.items() if rc == 0]
    assert len(won) == 1, ends
    winner, loser = won[0], next(c for c in ends if c not in won)
    assert ends[loser][3] == 7
    assert f"run {run_id} is being written by another pgknee (pid {ends[winner][0]} on {socket.gethostname()})" \
        in one_error_line(ends[loser][2])
    assert sql(store, "SELECT clients, status FROM steps ORDER BY seq") == [(2, "completed"), (4, "completed"),
                                                                           (int(winner), "completed")]
    assert sql(store, "SELECT status, steps_planned FROM runs") == [("completed", 3)]
    assert_nothing_left(state, [p.pid for p in procs.values()], dirs)


@pytest.fixture
def failing_pgbench() -> Path:
    """pgbench, but it fails at 16 clients (where pgknee's children can run it)."""
    d = Path(RUN_TMP) / "bin"
    d.mkdir(exist_ok=True, mode=0o755)
    script = d / "pgbench"
    real = shutil.which("pgbench")
    assert real is not None
    script.write_text("#!/bin/sh\n"
                      'for a in "$@"; do [ "$a" = "--client=16" ] && { echo "pgbench: error: the test\'s pgbench fails '
                      'at 16 clients" >&2; exit 1; }; done\n'
                      f'exec {real} "$@"\n')
    script.chmod(0o755)
    return script


def test_a_failed_extend_leaves_the_run_as_it_was(completed: tuple[Path, str, str], tmp_path: Path, state: Path,
                                                  failing_pgbench: Path) -> None:
    store = _copy(completed, tmp_path)
    run_id, dsn = completed[1], completed[2]
    before, dirs = _dump(store, run_id), tmp_pgknee_dirs()
    r = run("run", "--extend", run_id, "--clients", "16", "--dsn", dsn, "--pgbench", str(failing_pgbench),
            "--store", str(store), state=state, cwd=tmp_path)
    assert r.code == 4
    assert one_error_line(r.err).startswith("pgknee: error: pgbench failed at 16 clients: ")
    after = _dump(store, run_id)
    notes = {k: v for k, v in after["env"].items() if k.startswith("extended.")}  # type: ignore[attr-defined]
    for k in notes:
        del after["env"][k]  # type: ignore[attr-defined]
    assert after == before  # every row as it was
    (note,) = notes.values()
    assert note.startswith("clients 16 added on a new session to ")
    assert note.endswith(": failed: pgbench failed at 16 clients: pgbench exit 1: pgbench: error: the test's pgbench "
                         "fails at 16 clients; nothing kept")
    assert_nothing_left(state, [], dirs)


def test_a_failed_extend_keeps_the_steps_it_completed(completed: tuple[Path, str, str], tmp_path: Path, state: Path,
                                                      failing_pgbench: Path) -> None:
    store = _copy(completed, tmp_path)
    run_id, dsn = completed[1], completed[2]
    before, dirs = _dump(store, run_id), tmp_pgknee_dirs()
    r = run("run", "--extend", run_id, "--clients", "8,16", "--dsn", dsn, "--pgbench", str(failing_pgbench),
            "--store", str(store), state=state, cwd=tmp_path)
    assert r.code == 4 and "pgbench failed at 16 clients" in one_error_line(r.err)
    was = before["runs"][0]  # type: ignore[index]
    now = sql(store, "SELECT status, status_reason, finished_at, steps_planned, plan_json FROM runs")[0]
    assert now[:4] == (was[3], was[4], was[2], 3) == ("completed", None, was[2], 3)
    assert json.loads(str(now[4]))["clients"] == [2, 4, 8]
    assert sql(store, "SELECT clients, status FROM steps ORDER BY seq") == [(2, "completed"), (4, "completed"),
                                                                           (8, "completed")]
    assert sql(store, "SELECT count(*) FROM run_commands WHERE step_id NOT IN (SELECT step_id FROM steps)") == [(0,)]
    (note,) = [v for k, v in sql(store, "SELECT key, value FROM run_environment") if str(k).startswith("extended.")]
    assert str(note).endswith("kept the completed steps of clients 8")
    shown = run("show", run_id, "--store", str(store), state=state, cwd=tmp_path)
    assert shown.code == 0 and "completed  (3/3 steps)" in shown.out
    assert_nothing_left(state, [], dirs)


def test_resume_takes_over_a_run_whose_pgknee_died(completed: tuple[Path, str, str], tmp_path: Path,
                                                   state: Path) -> None:
    """A pgknee and its watchdog killed (an OOM killer, a reboot): the run is left 'running' with an
    owner that is gone; --resume, from another registry that knows nothing of it, takes it over."""
    dsn = completed[2]
    store = tmp_path / "k.db"
    dirs = tmp_pgknee_dirs()
    killed = start("run", "--dsn", dsn, "--clients", "2,2,2", "--duration", "2s", "--scale", SCALE, "--schema",
                   "faults_extend", "--store", str(store), state=state, cwd=tmp_path)

    def one_done() -> bool:
        try:
            return sql(store, "SELECT count(*) FROM steps WHERE status = 'completed'") == [(1,)]
        except sqlite3.Error:
            return False

    assert wait_for(lambda: one_done() or killed.poll() is not None, 120) and killed.poll() is None, \
        killed.communicate()
    (entry,) = state.glob("pgknee-*.json")
    watchdog = json.loads(entry.read_text())["watchdog"][0]
    os.kill(watchdog, signal.SIGKILL)
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)
    run_id = str(sql(store, "SELECT run_id FROM runs")[0][0])
    owner = str(sql(store, "SELECT owner FROM runs")[0][0])
    assert sql(store, "SELECT status FROM runs") == [("running",)] and owner.split(":")[1] == str(killed.pid)
    time.sleep(0.5)
    other = tmp_path / "other-state"
    other.mkdir(mode=0o700)
    extended = run("run", "--extend", run_id, "--clients", "8", "--dsn", dsn, "--store", str(store), state=other,
                   cwd=tmp_path)
    assert extended.code == 2 and one_error_line(extended.err) == (
        f"pgknee: error: run {run_id} was left 'running' by a pgknee that is gone: it cannot be extended as it is "
        f"('pgknee run --resume {run_id}' runs its missing steps first)")
    resumed = run("run", "--resume", run_id, "--dsn", dsn, "--store", str(store), state=other, cwd=tmp_path)
    assert resumed.code == 0, resumed.err
    assert sql(store, "SELECT status FROM runs") == [("completed",)]
    assert str(sql(store, "SELECT owner FROM runs")[0][0]) != owner
    assert [c for c, st in sql(store, "SELECT clients, status FROM steps") if st == "completed"] == [2, 2, 2]
    cleaned = run("cleanup", state=state, cwd=tmp_path)  # what the killed pgknee left: its directory
    assert cleaned.code == 0
    assert sql(store, "SELECT status FROM runs") == [("completed",)]  # the sweep does not undo the resumed run
    assert_nothing_left(state, [killed.pid, watchdog], dirs)
    assert_nothing_left(other, [], dirs)
