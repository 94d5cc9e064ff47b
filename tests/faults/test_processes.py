"""Faults done to real processes: pgknee killed (SIGKILL mid-step and in preflight, the stop
signals), the server killed and restarted mid-step, pgknee's own sessions terminated, a pgbench
killed. Each checks what was kept, how the run is marked, that nothing is left (by pid and
path), and that --resume completes the run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgknee.system.registry import start_time

pytestmark = [pytest.mark.integration, pytest.mark.faults]

SCALE = "0.1"
FAST = ("--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale", SCALE)


@pytest.fixture
def sandbox() -> Iterator[dict[str, str]]:
    """A TMPDIR and a registry of this test's own (other users must traverse the TMPDIR: as root
    the server runs as postgres)."""
    tmp = tempfile.mkdtemp(prefix="pgkt-faults-")
    os.chmod(tmp, 0o755)
    env = {**os.environ, "TMPDIR": tmp, "PGKNEE_STATE_DIR": os.path.join(tmp, "state"), "NO_COLOR": "1"}
    yield env
    subprocess.run(["rm", "-rf", tmp], check=False)


def _start(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pgknee", "run", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _run(env: dict[str, str], cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgknee", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


def _rows(store: Path, q: str) -> list[tuple[object, ...]]:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return db.execute(q).fetchall()
    except sqlite3.Error:
        return []


def _wait(pred: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]  # a zero-argument predicate
            return True
        time.sleep(0.1)
    return False


def _registry(env: dict[str, str]) -> dict[str, object]:
    """The one registry entry of the pgknee under test: what it started, as it recorded it."""
    entries = list(Path(env["PGKNEE_STATE_DIR"]).glob("pgknee-*.json"))
    assert len(entries) == 1, entries
    return json.loads(entries[0].read_text())  # type: ignore[no-any-return]


def _alive(pid: int, start: str) -> bool:
    """The recorded process still runs (a zombie has died: only init has not reaped it yet)."""
    return start_time(pid) == start


def _left_behind(entry: dict[str, object]) -> list[str]:
    children = entry.get("children") or []
    dirs = entry.get("dirs") or []
    wd = entry.get("watchdog")
    left = [f"{c['kind']} {c['pid']}" for c in children if _alive(c["pid"], c["start"])]  # type: ignore[index]
    left += [str(d) for d in dirs if os.path.exists(str(d))]  # type: ignore[union-attr]
    if wd:
        left += [f"watchdog {wd[0]}" for _ in [0] if _alive(wd[0], wd[1])]  # type: ignore[index]
    return left


def test_sigkill_mid_step_leaves_nothing_and_resume_completes(sandbox: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "k.db"
    p = _start(sandbox, tmp_path, "--clients", "2,4", "--reps", "2", "--duration", "3s", "--protocol", "extended",
               "--variant", "direct", "--variant", "pooled:transaction:pool=2", "--store", str(store), *FAST)
    # mid-step, through the pooler: the server, pgbouncer and pgbench all run
    assert _wait(lambda: len(_rows(store, "SELECT 1 FROM steps WHERE status = 'completed'")) >= 1
                 and _rows(store, "SELECT 1 FROM steps WHERE status = 'running' AND variant LIKE 'pooled%'"), 180)
    time.sleep(1.0)
    entry = _registry(sandbox)
    kinds = {c["kind"] for c in entry["children"]}  # type: ignore[index,union-attr]
    assert {"postgres", "pgbouncer", "pgbench"} <= kinds, kinds
    assert any("pgknee-cluster-" in d for d in entry["dirs"])  # type: ignore[union-attr]
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    t0 = time.monotonic()
    assert _wait(lambda: not _left_behind(entry), 30), _left_behind(entry)
    gone_in = time.monotonic() - t0
    assert gone_in < 30
    assert not list(Path(sandbox["PGKNEE_STATE_DIR"]).glob("pgknee-*.json"))  # the watchdog removed the entry
    ((status, reason),) = _rows(store, "SELECT status, status_reason FROM runs")
    assert status == "abandoned" and "died" in str(reason)
    kept = _rows(store, "SELECT seq FROM steps WHERE status = 'completed'")
    assert kept and not _rows(store, "SELECT 1 FROM steps WHERE status = 'running'")
    r = _run(sandbox, tmp_path, "run", "--resume", "last", "--store", str(store))
    assert r.returncode == 0, r.stderr
    assert _rows(store, "SELECT status FROM runs") == [("completed",)]
    # every (variant, clients, repetition) of the plan has a completed step: the run reads as one
    done = _rows(store, "SELECT variant, clients, rep FROM steps WHERE status = 'completed' ORDER BY 1, 2, 3")
    assert len(done) == 8 and len(set(done)) == 8, (done, r.stdout, r.stderr)
    assert "(8/8 steps)" in r.stdout


def test_sigkill_through_pgpool_and_two_pgbouncers_leaves_nothing(sandbox: dict[str, str], tmp_path: Path) -> None:
    """pgknee killed while pgpool serves a step (its children in pgpool's process group, not recorded
    one by one) after a step through two pgbouncer processes: the watchdog stops them all."""
    store = tmp_path / "k.db"
    p = _start(sandbox, tmp_path, "--clients", "4", "--duration", "4s", "--protocol", "extended",
               "--variant", "pooled:transaction:pool=2:processes=2", "--variant", "pgpool:pool=4",
               "--store", str(store), *FAST)
    assert _wait(lambda: len(_rows(store, "SELECT 1 FROM steps WHERE status = 'completed'")) >= 1
                 and _rows(store, "SELECT 1 FROM steps WHERE status = 'running' AND variant LIKE 'pgpool%'"), 180)
    time.sleep(1.5)
    entry = _registry(sandbox)
    kinds = [c["kind"] for c in entry["children"]]  # type: ignore[index,union-attr]
    assert "pgpool" in kinds and "pgbench" in kinds, kinds
    pgpool = next(c["pid"] for c in entry["children"] if c["kind"] == "pgpool")  # type: ignore[index,union-attr]
    group = subprocess.run(["pgrep", "-g", str(pgpool)], capture_output=True, text=True, check=False).stdout.split()
    assert len(group) >= 6, group  # its main, its 4 + 1 children, pcp and helpers
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    assert _wait(lambda: not _left_behind(entry), 30), _left_behind(entry)
    assert _wait(lambda: not subprocess.run(["pgrep", "-g", str(pgpool)], capture_output=True, text=True,
                                            check=False).stdout.split(), 30), "pgpool's children were left"
    assert not list(Path(sandbox["TMPDIR"]).glob("pgknee-pgpool-*"))
    assert not list(Path(sandbox["TMPDIR"]).glob("pgknee-pgbouncer-*"))


def _sleeps(entry: dict[str, object]) -> list[tuple[int, str]]:
    """The `sleep` processes (pid, start) in the group of the entry's first child."""
    group = entry["children"][0]["pid"]  # type: ignore[index]
    out = subprocess.run(["pgrep", "-g", str(group), "-x", "sleep"], capture_output=True, text=True, check=False).stdout
    return [(int(pid), start) for pid in out.split() if (start := start_time(int(pid)))]


def test_sigkill_in_preflight_leaves_nothing(sandbox: dict[str, str], tmp_path: Path) -> None:
    """pgbench that takes its time to say its version: pgknee is killed while it waits."""
    slow = tmp_path / "pgbench"
    slow.write_text("#!/bin/sh\nsleep 60 & wait\nexec /usr/bin/pgbench \"$@\"\n")
    slow.chmod(0o755)
    p = _start(sandbox, tmp_path, "--clients", "2", "--duration", "1s", "--pgbench", str(slow),
               "--store", str(tmp_path / "p.db"))
    assert _wait(lambda: list(Path(sandbox["PGKNEE_STATE_DIR"]).glob("pgknee-*.json"))
                 and _registry(sandbox)["children"] and _sleeps(_registry(sandbox)), 30)
    entry = _registry(sandbox)
    sleeps = _sleeps(entry)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    # the parent-death signal kills the wrapper (the group's leader) at once; its background
    # sleep is left in the group, and the watchdog stops that too
    assert _wait(lambda: not _left_behind(entry) and not any(_alive(*s) for s in sleeps), 30), \
        (_left_behind(entry), [s for s in sleeps if _alive(*s)])
    assert not (tmp_path / "p.db").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_stop_signals_end_the_run_in_order(sandbox: dict[str, str], tmp_path: Path, sig: signal.Signals) -> None:
    store = tmp_path / "s.db"
    p = _start(sandbox, tmp_path, "--clients", "2,2,2", "--duration", "3s", "--store", str(store), *FAST)
    assert _wait(lambda: _rows(store, "SELECT 1 FROM steps WHERE status = 'running'"), 180)
    entry = _registry(sandbox)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert f"interrupted by {sig.name}" in err and "Traceback" not in err
    assert _rows(store, "SELECT status FROM runs") == [("interrupted",)]
    assert not _rows(store, "SELECT 1 FROM steps WHERE status = 'running'")
    assert not _left_behind(entry)
    assert not list(Path(sandbox["PGKNEE_STATE_DIR"]).glob("pgknee-*.json"))


def _cluster(env: dict[str, str]) -> tuple[int, Path, int]:
    """The embedded server under test: its postmaster, its directory, its port."""
    entry = _registry(env)
    pm = next(c for c in entry["children"] if c["kind"] == "postgres")  # type: ignore[union-attr,index]
    root = next(Path(d) for d in entry["dirs"] if "pgknee-cluster-" in d)  # type: ignore[union-attr]
    port = int((root / "postgresql.conf").read_text().split("port = ")[1].split()[0])
    return int(pm["pid"]), root, port


def _step_running(store: Path, seq: int) -> bool:
    return bool(_rows(store, f"SELECT 1 FROM steps WHERE seq = {seq} AND status = 'running'"))


def test_the_sweep_survives_its_server_and_its_own_sessions(sandbox: dict[str, str], tmp_path: Path) -> None:
    """One run of six steps: the postmaster killed -9 in step 2, the server restarted (pg_ctl
    restart -m fast) in step 3, pgknee's sampler and statistics sessions terminated in step 4,
    pgbench killed in step 5. Each such step fails with its reason (or completes, where only
    pgknee's sessions went), and the sweep goes on to a completed run."""
    store = tmp_path / "f.db"
    p = _start(sandbox, tmp_path, "--clients", "2,2,2,2,2,2", "--duration", "4s", "--store", str(store), *FAST)

    def during(seq: int) -> None:
        assert _wait(lambda: _step_running(store, seq), 180), f"step {seq} never ran"
        time.sleep(1.5)

    during(2)
    pm, root, port = _cluster(sandbox)
    os.kill(pm, signal.SIGKILL)
    during(3)
    pm, root, port = _cluster(sandbox)
    subprocess.run(["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl", "-D", str(root / "data"),
                    "-o", f"-c config_file={root / 'postgresql.conf'}", "restart", "-m", "fast", "-w"]
                   if os.geteuid() == 0 else ["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False, timeout=60)  # no pipes: the server pg_ctl starts would hold them
    during(4)
    with psycopg.connect(host=str(root / "sock"), port=port, user="pgknee", dbname="pgknee", autocommit=True) as c:
        ended = c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name "
                          "IN ('pgknee:sampler', 'pgknee:stats')").fetchone()
    assert ended == (2,)
    during(5)
    # this run's pgbench, as its pgknee recorded it (not another test's)
    bench = next(c for c in _registry(sandbox)["children"] if c["kind"] == "pgbench")  # type: ignore[union-attr,index]
    os.killpg(int(bench["pid"]), signal.SIGKILL)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    steps = dict(_rows(store, "SELECT seq, status FROM steps"))
    assert steps == {1: "completed", 2: "failed", 3: "failed" if os.geteuid() == 0 else "completed",
                     4: "completed", 5: "failed", 6: "completed"}, steps
    reasons = dict(_rows(store, "SELECT seq, status_reason FROM steps WHERE status = 'failed'"))
    assert "restarted or could not be reached" in str(reasons[2])
    facts = {(s, n): v for s, n, v in _rows(store, "SELECT seq, name, value FROM step_facts JOIN steps "
                                                   "USING (step_id) WHERE name LIKE 'activity.%'")}
    assert facts.get((4, "activity.reconnects"), 0) >= 1 and facts.get((4, "activity.ticks_lost"), 0) >= 1
    # the statistics session ended in step 4 was made again, and its pg_stat_database change kept
    commits = _rows(store, "SELECT delta FROM step_pg_stat_database JOIN steps USING (step_id) "
                           "WHERE seq = 4 AND name = 'xact_commit'")
    assert commits and float(commits[0][0]) > 0, commits
    assert _rows(store, "SELECT status FROM runs") == [("completed",)]
    assert "the server answers again" in err and "money conserved" in err
    shown = _run(sandbox, tmp_path, "show", "last", "--store", str(store))
    assert "the server restarted or could not be reached during step 2" in shown.stdout
    # the server pg_ctl started (not pgknee's child) was adopted and stopped at the end too
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert sandbox["TMPDIR"] not in ps
    assert not list(Path(sandbox["TMPDIR"]).glob("pgknee-*"))


def test_cleanup_after_pgknee_and_its_watchdog_died(sandbox: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "c.db"
    p = _start(sandbox, tmp_path, "--clients", "2,2", "--duration", "4s", "--store", str(store), *FAST)
    assert _wait(lambda: _rows(store, "SELECT 1 FROM steps WHERE status = 'running'"), 180)
    entry = _registry(sandbox)
    wd = entry["watchdog"]
    os.kill(wd[0], signal.SIGKILL)  # type: ignore[index]
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    time.sleep(1.0)  # the server's fast shutdown (parent-death signal) may leave its directory
    r = _run(sandbox, tmp_path, "cleanup")
    assert r.returncode == 0, r.stderr
    assert "marked run" in r.stdout and "abandoned" in r.stdout
    assert any(line.startswith("removed ") and "pgknee-cluster-" in line for line in r.stdout.splitlines())
    assert not _left_behind(entry)
    assert _rows(store, "SELECT status FROM runs") == [("abandoned",)]
    again = _run(sandbox, tmp_path, "cleanup")
    assert again.returncode == 0 and "nothing to clean up" in again.stdout


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_sigkill_leaves_no_network_relay(sandbox: dict[str, str], tmp_path: Path) -> None:
    """A variant with a simulated network hop (rtt=): its relay is registered and dies with pgknee."""
    store = tmp_path / "r.db"
    p = _start(sandbox, tmp_path, "--clients", "2", "--duration", "20s", "--variant", "rtt=5ms",
               "--store", str(store), *FAST)

    def relays() -> list[dict[str, object]]:
        entries = list(Path(sandbox["PGKNEE_STATE_DIR"]).glob("pgknee-*.json"))
        children = json.loads(entries[0].read_text())["children"] if entries else []
        return [c for c in children if "pgknee.netsim.relay" in _cmdline(c["pid"])]

    assert _wait(lambda: _rows(store, "SELECT 1 FROM steps WHERE status = 'running'") and relays(), 180)
    entry = _registry(sandbox)
    (relay,) = relays()
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    assert _wait(lambda: not _alive(relay["pid"], relay["start"]), 10)  # type: ignore[arg-type]
    assert _wait(lambda: not _left_behind(entry), 30), _left_behind(entry)
