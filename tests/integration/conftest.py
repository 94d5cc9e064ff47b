"""Integration fixtures: real PostgreSQL (pgknee's own embedded cluster code) and
real pgbench, started by the tests themselves. Nothing is mocked."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster, find_bindir

pytestmark = pytest.mark.integration

# small data so that seeding takes about a second
SCALE = "0.1"

# pgknee's throwaway directories (and so its server processes) go to a directory of this test
# session's own, so that what the tests check is what they started, even with other pgknee runs on
# the machine. Other users must traverse it: as root the server runs as postgres.
RUN_TMP = tempfile.mkdtemp(prefix="pgkt-tmp-")
os.chmod(RUN_TMP, 0o755)
ENV = {**os.environ, "NO_COLOR": "1", "TMPDIR": RUN_TMP}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(RUN_TMP, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def pgknee(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
           timeout: float = 300) -> CliResult:
    """Run the real command, as a user would."""
    full_env = {**ENV, **(env or {})}
    p = subprocess.run([sys.executable, "-m", "pgknee", *args], capture_output=True, text=True, env=full_env,
                       cwd=cwd, timeout=timeout, check=False)
    return CliResult(p.returncode, p.stdout, p.stderr)


def pgknee_processes() -> list[str]:
    """postgres or pgbench processes that belong to pgknee's private directories."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if f"{RUN_TMP}/pgknee-" in ln and "ps -eo" not in ln]


def tmp_pgknee_dirs() -> set[str]:
    return {p.name for p in Path(RUN_TMP).glob("pgknee-*")}


@pytest.fixture(scope="session")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, CliResult]]:
    """One real sweep on the embedded cluster, shared by the tests that read its store."""
    d = tmp_path_factory.mktemp("sweep")
    store, js = d / "s.db", d / "s.json"
    r = pgknee("run", "--clients", "2,4", "--duration", "3s", "--reps", "2", "--scale", SCALE,
               "--store", str(store), "--json", str(js), cwd=d)
    assert r.code == 0, r.err
    yield store, js, r


@pytest.fixture(scope="session")
def server() -> Iterator[EmbeddedCluster]:
    """A PostgreSQL server that pgknee did NOT create for the run: it plays the user's
    server for --dsn tests (an app role with a password, an app schema with data)."""
    # the server may run as another user (root runs it as postgres), so its directory must be
    # reachable by that user; and it must not look like one of pgknee's own run directories
    base = tempfile.mkdtemp(prefix="pgkt-server-")
    os.chmod(base, 0o755)
    c = EmbeddedCluster(find_bindir(), {"max_connections": "60"}, base_dir=base)
    c.start()
    c.create_database()
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee", autocommit=True) as conn:
        conn.execute("CREATE ROLE app LOGIN PASSWORD 's3cr3t:pw\\x'")
        conn.execute("GRANT CREATE ON DATABASE pgknee TO app")
        conn.execute("CREATE SCHEMA userdata AUTHORIZATION app")
        conn.execute("CREATE TABLE userdata.orders (id int PRIMARY KEY, total numeric)")
        conn.execute("INSERT INTO userdata.orders SELECT g, g * 1.5 FROM generate_series(1, 100) g")
        conn.execute("ALTER TABLE userdata.orders OWNER TO app")
    yield c
    c.close()
    shutil.rmtree(base, ignore_errors=True)


APP_PASSWORD = "s3cr3t:pw\\x"


def dsn_of(c: EmbeddedCluster, user: str = "app") -> str:
    return f"postgresql://{user}@127.0.0.1:{c.port}/pgknee"


def sql(store: Path, q: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(store) as db:
        return db.execute(q, args).fetchall()


def wait_for(pred: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def have_binaries() -> bool:
    try:
        find_bindir()
    except Exception:
        return False
    return shutil.which("pgbench") is not None
