"""A PostgreSQL results store that goes away mid-run (its server shut down, as an outage or a
failover does): the step that could not be written goes to a side file with the reason, the
run ends with one line naming the store (not the benchmarked server) and where its results
are, and `pgknee store import` loads them once the store is back. The store is a cluster of
the test's own."""

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
    SCALE,
    assert_nothing_left,
    one_error_line,
    pgknee_processes,
    run,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

KEEPER = "k33p:er"


@pytest.fixture
def results() -> Iterator[EmbeddedCluster]:
    base = tempfile.mkdtemp(prefix="pgkt-results-")
    os.chmod(base, 0o755)
    c = EmbeddedCluster(find_bindir(), {"max_connections": "20"}, base_dir=base)
    c.start()
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE ROLE keeper LOGIN PASSWORD '{KEEPER}'")
        conn.execute("CREATE DATABASE results OWNER keeper")
    yield c
    c.close()
    shutil.rmtree(base, ignore_errors=True)


def _steps(dsn: str) -> dict[int, str]:
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            return {int(s): str(st) for s, st in conn.execute("SELECT seq, status FROM pgknee.steps")}
    except psycopg.Error:
        return {}


def test_a_store_gone_mid_run_keeps_the_step_aside_and_import_loads_it(results: EmbeddedCluster, tmp_path: Path,
                                                                         state: Path) -> None:
    dsn = f"host=127.0.0.1 port={results.port} dbname=results user=keeper password='{KEEPER}'"
    side = tmp_path / "side"
    side.mkdir()
    dirs = tmp_pgknee_dirs()
    p = start("run", "--clients", "1,2", "--duration", "3s", "--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s",
              "--scale", SCALE, state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn, PGKNEE_SIDE_DIR=str(side))
    assert wait_for(lambda: _steps(dsn).get(2) == "running", 180), "step 2 never ran"
    time.sleep(1.0)
    results.stop()  # the store's server shuts down: its sessions end, new ones are refused
    out, err = p.communicate(timeout=300)
    assert p.returncode == 5, err  # the store's exit code, not the target's
    line = one_error_line(err)
    assert line.startswith("pgknee: error: lost the connection to the results store user=keeper"), line
    assert KEEPER not in out + err
    (kept,) = side.glob("pgknee-store.*.step-2.json")
    assert f"step 2's results are kept in {kept}" in line
    assert_nothing_left(state, [p.pid], dirs)

    assert results.revive()
    assert _steps(dsn) == {1: "completed", 2: "running"}
    r = run("store", "import", str(kept), state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert r.code == 0, r.err
    assert "step 2 (c2 rep 1)" in r.out and "marked 'failed'" in r.out
    assert _steps(dsn) == {1: "completed", 2: "completed"}
    r = run("show", "last", state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert r.code == 0 and "(2/2 steps)" in r.out, r.err


def test_a_run_whose_pgknee_was_killed_is_shown_as_gone_and_resumed(results: EmbeddedCluster, tmp_path: Path,
                                                                   state: Path) -> None:
    """kill -9 of a pgknee writing to a PostgreSQL store: its watchdog stops what it started, but
    the run stays 'running' there (the watchdog holds no password for the store). `pgknee runs`
    says its pgknee is gone and names the --resume that finishes it, which then does."""
    dsn = f"host=127.0.0.1 port={results.port} dbname=results user=keeper password='{KEEPER}'"
    dirs = tmp_pgknee_dirs()
    flags = ("--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale", SCALE)
    p = start("run", "--clients", "1,2", "--duration", "3s", *flags, state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert wait_for(lambda: _steps(dsn).get(2) == "running", 180), "step 2 never ran"
    p.kill()
    p.communicate(timeout=60)
    assert wait_for(lambda: not pgknee_processes() and not list(state.glob("pgknee-*.json")), 60)  # its watchdog
    assert_nothing_left(state, [p.pid], dirs)
    r = run("runs", state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert r.code == 0, r.err
    (run_id,) = [ln.split()[0] for ln in r.out.splitlines() if "running, its pgknee gone" in ln]
    assert f"'pgknee run --resume {run_id}' runs the rest of it" in " ".join(r.out.split()), r.out
    r = run("run", "--resume", run_id, state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert r.code == 0, r.err
    assert _steps(dsn) == {1: "completed", 2: "failed", 3: "completed"}  # the killed step, then its rerun
    r = run("runs", "--json", "-", state=state, cwd=tmp_path, PGKNEE_STORE_DSN=dsn)
    assert r.code == 0 and '"status": "completed"' in r.out and '"owner_gone": false' in r.out, r.out + r.err
