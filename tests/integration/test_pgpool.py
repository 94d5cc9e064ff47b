"""pgpool-II in the lab, for real: a managed pgpool in front of the user's server (the session's
server, SCRAM over TCP, and its trusted private socket), pgbench through it, its children seen
through SHOW POOL_POOLS and by the server, a client beyond the children left waiting, a port
taken between choosing and binding, and nothing left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from pgknee.base.errors import PoolerError
from pgknee.pooler import pgpool as pgpool_module
from pgknee.pooler.pgpool import ManagedPgpool, PgpoolSettings, PgpoolSnapshot, find_pgpool, pgpool_version
from pgknee.system import proc, registry, safefs
from pgknee.targets.base import Endpoint
from pgknee.targets.local import EmbeddedCluster, free_port, server_user

from .conftest import APP_PASSWORD, RUN_TMP, shm_created_by, superuser, wait_for

SCRIPT = "\\set id random(1, 100)\nSELECT total FROM userdata.orders WHERE id = :id;\n"


def _app(server: EmbeddedCluster) -> Endpoint:
    return Endpoint({"host": "127.0.0.1", "port": str(server.port), "dbname": "pgknee", "user": "app"}, APP_PASSWORD)


def _managed(target: Endpoint, pool_size: int, max_clients: int) -> ManagedPgpool:
    binary = find_pgpool()
    _, version = pgpool_version(binary)
    return ManagedPgpool(binary, version, target, PgpoolSettings(pool_size, max_clients), run_as=server_user(),
                         base_dir=RUN_TMP)


def _server_connections(server: EmbeddedCluster, user: str) -> int:
    with superuser(server) as c:
        row = c.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND pid <> pg_backend_pid()",
                        (user,)).fetchone()
    return int(str(row[0])) if row else -1


def _pgbench(pool: ManagedPgpool, clients: int, seconds: int) -> subprocess.Popen[bytes]:
    """pgbench through pgpool as pgknee runs it: as the server's user when root, its password in a
    passfile of a private directory (the environment pgknee builds), never on its command line."""
    d = safefs.private_dir("pgknee-pgbench-", base=RUN_TMP, reachable_by=pool.run_as)
    safefs.create_file(d / "select.sql", SCRIPT.encode(), mode=0o644)
    env = pool.client_endpoint.child_env(d, pool.run_as)
    assert APP_PASSWORD not in "".join(env.values())
    argv = ["pgbench", "-n", "-c", str(clients), "-j", "2", "-T", str(seconds), "-f", str(d / "select.sql")]
    p = proc.spawn(argv, env=env, run_as=pool.run_as, cwd=str(d))
    p.private_dir = d  # type: ignore[attr-defined]
    return p


def _alive(pid: int, start: str | None) -> bool:
    return registry.is_alive(pid, start)


def test_pgbench_through_a_managed_pgpool(server: EmbeddedCluster) -> None:
    pool = _managed(_app(server), pool_size=4, max_clients=4)
    pool.start()
    try:
        pids = pool.pids()
        starts = {p: registry.start_time(p) for p in pids}
        assert len(pids) >= 1 + 5  # the main process, 4 children and the console's, pcp and helpers
        assert pool.snapshot() == PgpoolSnapshot(4, 0, 0, 0, 0, 0, 1, 0)
        cpu_before = pool.cpu_seconds()
        bench = _pgbench(pool, clients=4, seconds=5)
        seen: list[tuple[PgpoolSnapshot, int]] = []
        while bench.poll() is None:
            seen.append((pool.snapshot(), _server_connections(server, "app")))
            time.sleep(0.2)
        out, err = bench.communicate()
        proc.stop(bench)
        safefs.remove_private_dir(bench.private_dir)  # type: ignore[attr-defined]
        assert bench.returncode == 0, err.decode()
        m = re.search(rb"number of transactions actually processed: (\d+)", out)
        assert m and int(m.group(1)) > 100, out
        assert b"number of failed transactions: 0 " in out
        # every 0.2 s beside pgbench, each snapshot with a new superuser login: 25 on a quiet machine,
        # 2 once in make matrix's third worker on 2 CPUs; the figures below need the busy ones
        assert len(seen) >= 3
        assert all(s.children == 4 and s.console == 1 and s.server_connections <= 4 for s, _ in seen), seen
        assert max(s.busy for s, _ in seen) == 4  # every client in a child of its own
        # the server sees a connection per child (and the console's), not more
        assert all(n <= 5 for _, n in seen) and max(n for _, n in seen) == 5, seen
        after = pool.snapshot()
        assert after.busy == 0 and after.server_connections == 4  # cached for the next clients
        assert after.clients_served >= 4 and pool.alive() and pool.log_tail() == ""
        cpu_after = pool.cpu_seconds()
        assert cpu_before is not None and cpu_after is not None and cpu_after > cpu_before + 0.1
    finally:
        pool.close()
    assert not any(_alive(p, s) for p, s in starts.items()), "a pgpool process outlived close()"
    assert not pool.dir.exists() and not pool.alive()
    assert shm_created_by(set(pids)) == []  # its fast shutdown removed its shared memory
    assert wait_for(lambda: _server_connections(server, "app") == 0, 10)


def test_a_killed_pgpool_leaves_no_shared_memory(server: EmbeddedCluster) -> None:
    """Its main process SIGKILLed (as when a shutdown outlasts its grace): its shared memory, which
    only its own shutdown removes, is removed when pgknee stops it (once in ten loaded make test
    runs, a 4 KB segment was left)."""
    pool = _managed(_app(server), pool_size=2, max_clients=2)
    pool.start()
    try:
        main, *_ = all_pids = pool.pids()  # the main process first, then those below it
        pids = set(all_pids)
        assert shm_created_by(pids), "pgpool made no SysV shared memory: nothing to test"
        os.kill(main, signal.SIGKILL)
        assert wait_for(lambda: not pool.alive(), 10)
    finally:
        pool.close()
    assert shm_created_by(pids) == []


def test_a_trusted_server_is_refused(server: EmbeddedCluster) -> None:
    """No password (the server trusts its private socket): pgpool would log its clients in with
    'trust' and let any local user through as that user, so it is refused before anything is
    written."""
    target = Endpoint({"host": str(server.sock), "port": str(server.port), "dbname": "pgknee", "user": "pgknee"})
    before = set(Path(RUN_TMP).glob("pgknee-pgpool-*"))
    with pytest.raises(PoolerError, match="pgpool would let any local user through to it as that user"):
        _managed(target, pool_size=2, max_clients=2)
    assert set(Path(RUN_TMP).glob("pgknee-pgpool-*")) == before


def test_a_client_beyond_the_children_waits(server: EmbeddedCluster) -> None:
    """pgpool queues a client beyond its children in the listen queue, without an error, until
    a child is free; the console's own child still answers meanwhile."""
    pool = _managed(_app(server), pool_size=2, max_clients=3)
    pool.start()
    holders = [psycopg.connect(**pool.client_endpoint.kwargs("pgknee:test")) for _ in range(2)]
    third: list[object] = []

    def connect() -> None:
        with psycopg.connect(**pool.client_endpoint.kwargs("pgknee:test", timeout=30)) as c:
            third.append(c.execute("SELECT 1").fetchone())

    t = threading.Thread(target=connect, daemon=True)
    try:
        t.start()
        assert wait_for(lambda: pool.snapshot().waiting == 1, 10)
        snap = pool.snapshot()
        assert snap.busy == 2 and snap.children == 2 and third == []
        holders.pop().close()
        t.join(timeout=20)
        assert third == [(1,)]
    finally:
        for h in holders:
            h.close()
        pool.close()


def test_a_port_taken_before_pgpool_binds_it_is_retried(server: EmbeddedCluster,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        monkeypatch.setattr(pgpool_module, "free_port", lambda: next(ports, 0) or free_port())
        pool = _managed(_app(server), pool_size=1, max_clients=1)
        try:
            pool.start()
            assert pool.port != taken.getsockname()[1] and pool.alive()
            assert "Address already in use" in pool.log_tail()
        finally:
            pool.close()
        assert not pool.dir.exists()


def test_a_missing_binary(server: EmbeddedCluster) -> None:
    with pytest.raises(PoolerError) as e:
        find_pgpool("/nonexistent/pgpool")
    assert "--pgpool /nonexistent/pgpool is not an executable file" in e.value.one_line()
    pool = ManagedPgpool("/nonexistent/pgpool", (4, 3, 5), _app(server), PgpoolSettings(1, 1),
                         run_as=server_user(), base_dir=RUN_TMP)
    try:
        with pytest.raises(PoolerError, match="cannot run /nonexistent/pgpool"):
            pool.start()
    finally:
        pool.close()
    assert not pool.dir.exists() and not os.path.exists(pool.dir)
