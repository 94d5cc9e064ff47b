"""The user's server goes away during a step, as a restart, a failover or an outage does to a
remote server (pgknee cannot start it again: it waits). A server of the test's own, shut down
mid-step: back after a few seconds, the step fails with the reason and the sweep goes on; gone
for longer than --server-wait, the run ends with one line, the steps before kept, and --resume
completes it once the server is back."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster, find_bindir

from .conftest import (
    APP_PASSWORD,
    SCALE,
    assert_nothing_left,
    one_error_line,
    run,
    sql,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

FAST = ("--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale", SCALE)


@pytest.fixture
def remote() -> Iterator[EmbeddedCluster]:
    """A server of this test's alone (it is shut down): for pgknee a remote one, reached over TCP
    with a password."""
    base = tempfile.mkdtemp(prefix="pgkt-remote-")
    os.chmod(base, 0o755)
    c = EmbeddedCluster(find_bindir(), {"max_connections": "40"}, base_dir=base)
    c.start()
    c.create_database()
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee", autocommit=True) as conn:
        conn.execute(f"CREATE ROLE app LOGIN PASSWORD '{APP_PASSWORD}'")
        conn.execute("GRANT CREATE ON DATABASE pgknee TO app")
    yield c
    c.close()
    shutil.rmtree(base, ignore_errors=True)


def _running(store: Path, seq: int) -> bool:
    try:
        return bool(sql(store, "SELECT 1 FROM steps WHERE seq = ? AND status = 'running'", seq))
    except Exception:  # the store is not made yet
        return False


def _outage_in_step(remote: EmbeddedCluster, store: Path, seq: int) -> None:
    assert wait_for(lambda: _running(store, seq), 180), f"step {seq} never ran"
    time.sleep(1.0)
    remote.stop()  # a fast shutdown: every session ends, new connections are refused
    assert not remote.alive()


def test_a_server_back_within_the_wait_fails_one_step(remote: EmbeddedCluster, tmp_path: Path,
                                                        state: Path) -> None:
    store = tmp_path / "o.db"
    dirs = tmp_pgknee_dirs()
    p = start("run", "--dsn", f"postgresql://app@127.0.0.1:{remote.port}/pgknee", "--clients", "2,2,2,2",
              "--duration", "3s", "--store", str(store), *FAST, state=state, cwd=tmp_path)
    _outage_in_step(remote, store, 2)
    time.sleep(5.0)
    assert remote.revive()  # the server is back (on the same port)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    steps = dict(sql(store, "SELECT seq, status FROM steps"))
    assert steps == {1: "completed", 2: "failed", 3: "completed", 4: "completed"}, steps
    (reason,) = sql(store, "SELECT status_reason FROM steps WHERE seq = 2")[0]
    assert "restarted or could not be reached" in str(reason)
    assert "waiting for the server to come back" in err and "the server answers again" in err
    assert sql(store, "SELECT status FROM runs") == [("completed",)]
    assert "the server restarted or could not be reached during step 2" in out
    assert_nothing_left(state, [p.pid], dirs)


def test_a_server_gone_past_the_wait_ends_the_run_and_resume_completes_it(remote: EmbeddedCluster, tmp_path: Path,
                                                                          state: Path) -> None:
    store = tmp_path / "g.db"
    dirs = tmp_pgknee_dirs()
    dsn = f"postgresql://app@127.0.0.1:{remote.port}/pgknee"
    t0 = time.monotonic()
    p = start("run", "--dsn", dsn, "--clients", "2,2,2", "--duration", "3s", "--server-wait", "4s",
              "--store", str(store), *FAST, state=state, cwd=tmp_path)
    _outage_in_step(remote, store, 2)
    stopped = time.monotonic()
    out, err = p.communicate(timeout=300)
    ended_after = time.monotonic() - stopped
    assert p.returncode == 3, err
    line = one_error_line(err)
    assert line.startswith("pgknee: error: the server did not come back within 4 s: "), line
    assert line.endswith("(check the server; completed steps are kept ('pgknee run --resume' goes on))"), line
    assert ended_after < 60, ended_after  # the wait is bounded (the step's own end, then 4 s)
    assert "waiting for the server to come back (0 s of 4)" in err
    assert sql(store, "SELECT seq, status FROM steps WHERE status = 'completed'") == [(1, "completed")]
    ((status, why),) = sql(store, "SELECT status, status_reason FROM runs")
    assert status == "failed" and "did not come back" in str(why)
    assert_nothing_left(state, [p.pid], dirs)
    assert time.monotonic() - t0 < 200

    assert remote.revive()
    r = run("run", "--resume", "last", "--store", str(store), state=state, cwd=tmp_path)
    assert r.code == 0, r.err
    assert sql(store, "SELECT status FROM runs") == [("completed",)]
    done = sql(store, "SELECT clients, rep FROM steps WHERE status = 'completed' ORDER BY seq")
    assert len(done) == 3, done  # the plan's three steps, each once
    assert "(3/3 steps)" in r.out
