"""The supported PostgreSQL majors beside Debian's 15 (which the rest of the suite runs on), 16 to
18, in `make slow` (`make matrix` runs the integration tests that depend on the major against
each, which covers these too; here they stay out of `make test`'s five minutes): pgknee's
embedded cluster started on that major's binaries
(--pg-bindir), and the same major as a user's server (--dsn) with pg_stat_statements, captured and
replayed. Per major: the step completes with its checks, the wait events are sampled, the
server-side collectors read what that version has (pg_stat_wal and the checkpoint counters from
their view of that version, pg_stat_io from 16), and the capture reads that version's
pg_stat_statements (1.10 to 1.12). The binaries come from scripts/servers.py (make test fetches
them)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster, server_version

from .conftest import QUICK, SCALE, own_cluster, pgknee, sql, superuser, workload_tps_db

pytestmark = pytest.mark.slow  # three majors' clusters: 54 s of make test's workers, and make matrix covers them

SERVERS = Path(__file__).resolve().parents[2] / "scripts" / "servers.py"
MAJORS = (16, 17, 18)
# what each version keeps its checkpoint counters in, and its pg_stat_statements
CHECKPOINTS = {16: "pg_stat_bgwriter", 17: "pg_stat_checkpointer", 18: "pg_stat_checkpointer"}
PGSS = {16: "1.10", 17: "1.11", 18: "1.12"}


def bindir_of(major: int) -> Path:
    """The major's server binaries, fetched into the cache when they are not there (make test has)."""
    r = subprocess.run([sys.executable, str(SERVERS), str(major)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.split()[1])


@pytest.fixture(params=MAJORS, ids=[f"pg{m}" for m in MAJORS])
def major(request: pytest.FixtureRequest) -> tuple[int, Path]:
    d = bindir_of(request.param)
    assert server_version(d) is not None and server_version(d)[0] == request.param  # type: ignore[index]
    return request.param, d


def test_the_embedded_cluster_on_each_major(major: tuple[int, Path], tmp_path: Path) -> None:
    n, bindir = major
    store = tmp_path / "m.db"
    r = pgknee("run", "--pg-bindir", str(bindir), "--clients", "4", "--duration", "3s", "--scale", SCALE,
               "--store", str(store), "--quiet", *QUICK, cwd=tmp_path)
    assert r.code == 0, r.err
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert int(env["server.version_num"]) // 10000 == n, env["server.version"]
    ((sid, status, tps),) = sql(store, "SELECT step_id, status, tps FROM steps")
    assert status == "completed" and float(tps) > 100  # type: ignore[arg-type]
    assert abs(workload_tps_db(store, sid) / float(tps) - 1) < 0.05  # type: ignore[arg-type]  # pgknee's own reads, this version's too, taken out
    waits = {(t, e) for t, e in sql(store, "SELECT DISTINCT wait_event_type, wait_event FROM snap_pg_stat_activity "
                                           "WHERE _phase = 'bench' AND backend_type = 'client backend' "
                                           "AND state = 'active' AND wait_event IS NOT NULL")}
    assert waits, "no wait event sampled"
    assert ("IO", "WalSync") in waits or ("IO", "WALSync") in waits or ("LWLock", "WALWrite") in waits, waits
    _server_side(store, n)
    shown = pgknee("show", "last", "--store", str(store), "--no-waits")
    assert shown.code == 0 and "WAL bytes per transaction" in shown.out


def _server_side(store: Path, n: int) -> None:
    env = dict(sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'collect.server.%'"))
    assert env["collect.server.pg_stat_wal"] == "on" and env["collect.server.checkpoints"] == "on", env
    ((records, nbytes, syncs),) = sql(store, "SELECT records, bytes, syncs FROM step_wal")
    assert int(records) > 0 and float(nbytes) > 0 and syncs is not None and int(syncs) > 0  # 18: from pg_stat_io
    ((source, done),) = sql(store, "SELECT source, done FROM step_checkpoints")
    assert source == CHECKPOINTS[n] and (done is None) == (n < 18)
    io = sql(store, "SELECT sum(hits) FROM step_io WHERE backend_type = 'client backend' AND object = 'relation'")
    assert env["collect.server.pg_stat_io"] == "on" and int(io[0][0]) > 0  # 16+


@pytest.fixture
def source(major: tuple[int, Path]) -> Iterator[tuple[int, EmbeddedCluster]]:
    """A server of that major playing the user's, with pg_stat_statements and some traffic."""
    n, bindir = major
    with own_cluster(f"pg{n}", {"shared_preload_libraries": "pg_stat_statements"}, bindir,
                     extensions=("pg_stat_statements",)) as c:
        with superuser(c) as conn:
            conn.execute("CREATE TABLE orders (id int PRIMARY KEY, total numeric)")
            conn.execute("INSERT INTO orders SELECT g, g * 1.5 FROM generate_series(1, 1000) g")
            conn.execute("ANALYZE orders")
            for i in range(200):
                conn.execute("SELECT total FROM orders WHERE id = %s", (i + 1,))
        yield n, c


def test_a_capture_and_its_replay_on_each_major(source: tuple[int, EmbeddedCluster], tmp_path: Path) -> None:
    n, c = source
    dsn = f"postgresql://pgknee@127.0.0.1:{c.port}/pgknee"
    env = {"PGPASSWORD": c.password}
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee") as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone()
    assert row is not None and row[0] == PGSS[n]
    cap = pgknee("workload", "capture", "--dsn", dsn, "--output", str(tmp_path / "w"), env=env, cwd=tmp_path)
    assert cap.code == 0, cap.err
    assert (tmp_path / "w" / "workload.toml").is_file()
    store = tmp_path / "r.db"
    r = pgknee("run", "--dsn", dsn, "--workload", str(tmp_path / "w"), "--clients", "2", "--duration", "2s",
               "--store", str(store), "--quiet", *QUICK, env=env, cwd=tmp_path)
    assert r.code == 0, r.err
    ((status, tps),) = sql(store, "SELECT status, tps FROM steps")
    assert status == "completed" and float(tps) > 50
    replayed = sql(store, "SELECT count(*) FROM step_statements")
    assert int(replayed[0][0]) > 0  # this version's pg_stat_statements read around the step
