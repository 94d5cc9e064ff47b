"""The managed pgpool's pure parts: the generated pgpool.conf (every setting that shapes a sweep,
nothing from outside able to add a line), the password file's escaping, the refusals before
anything is written, the snapshot of SHOW POOL_POOLS, the listen queue read from /proc (no
pgpool, no server)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pgknee.base.errors import PoolerError
from pgknee.collect.osproc import descendants, listen_queue
from pgknee.pooler.pgpool import (
    ManagedPgpool,
    PgpoolSettings,
    PgpoolSnapshot,
    find_pgpool,
    passwd_field,
    pgpool_version,
    pool_snapshot,
    show,
)
from pgknee.targets.base import Endpoint

SERVER = {"host": "127.0.0.1", "port": "5432", "dbname": "pgknee", "user": "app"}


def _conf(tmp_path: Path, settings: PgpoolSettings | None = None, **server: str) -> dict[str, str]:
    text = (settings or PgpoolSettings(pool_size=20, max_clients=100)).conf(
        server={**SERVER, **server}, listen_port=6500, private_dir=tmp_path, run_dir=tmp_path / "run0",
)
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    pairs = dict(ln.split(" = ", 1) for ln in lines)
    assert len(pairs) == len(lines), "a setting given twice, or a line that is not one"
    return pairs


def test_conf_sets_every_setting_that_shapes_a_sweep(tmp_path: Path) -> None:
    c = _conf(tmp_path)
    expected = {
        "backend_clustering_mode": "'raw'", "backend_hostname0": "'127.0.0.1'", "backend_port0": "5432",
        "backend_flag0": "'DISALLOW_TO_FAILOVER'", "listen_addresses": "'127.0.0.1'", "port": "6500",
        "num_init_children": "21", "max_pool": "1", "connection_cache": "on", "child_life_time": "0",
        "child_max_connections": "0", "connection_life_time": "0", "client_idle_limit": "0",
        "reserved_connections": "0", "load_balance_mode": "off", "health_check_period": "0", "sr_check_period": "0",
        "use_watchdog": "off", "memory_cache_enabled": "off", "enable_shared_relcache": "off",
        "failover_on_backend_error": "off", "log_destination": "'stderr'", "logging_collector": "off",
        "enable_pool_hba": "on", "allow_clear_text_frontend_auth": "off", "ssl": "off",
        "pcp_listen_addresses": "''", "pcp_port": "6501",
        "socket_dir": f"'{tmp_path}/run0'", "pcp_socket_dir": f"'{tmp_path}/run0'",
        "pid_file_name": f"'{tmp_path}/run0/pgpool.pid'", "logdir": f"'{tmp_path}/run0'",
        "pool_passwd": f"'{tmp_path}/pool_passwd'",
    }
    for key, value in expected.items():
        assert c[key] == value, key
    # nothing of the server's user, database or password in the configuration
    text = "\n".join(c.values())
    assert "app" not in text and "pgknee" not in text.replace(str(tmp_path), "")


def test_pool_size_maps_onto_children_and_the_backlog(tmp_path: Path) -> None:
    with_console = PgpoolSettings(pool_size=8, max_clients=16)
    assert with_console.num_init_children == 9  # one child for pgknee's console connection
    bare = PgpoolSettings(pool_size=8, max_clients=16, console=False)
    assert bare.num_init_children == 8 and _conf(tmp_path, bare)["num_init_children"] == "8"
    # the listen queue (multiplier x children) holds every client and pgknee's own connections
    for s in (PgpoolSettings(20, 5000), PgpoolSettings(1, 1), PgpoolSettings(4, 4), PgpoolSettings(3, 200, False)):
        assert s.backlog_multiplier >= 2 and s.backlog_multiplier * s.num_init_children >= s.max_clients + 2
    assert PgpoolSettings(20, 5000).backlog_multiplier == 239 and PgpoolSettings(4, 4).backlog_multiplier == 2
    d = with_console.describe()
    assert d["num_init_children"] == "9" and d["max_pool"] == "1" and d["console_child"] == "1"
    assert d["listen_backlog"] == str(with_console.backlog_multiplier * 9) and d["pool_size"] == "8"
    assert _conf(tmp_path, PgpoolSettings(4, 100))["listen_backlog_multiplier"] == "21"


@pytest.mark.parametrize(("host", "words"), [
    ("127.0.0.1'\nnum_init_children = 1000", "control character"),
    ("db\nmax_pool = 9", "control character"),
    ("db'x", "quote or a backslash"),
    ("db\\", "quote or a backslash"),  # a trailing backslash would take the closing quote
    ("db\r", "control character"),
])
def test_no_server_value_can_add_a_line(tmp_path: Path, host: str, words: str) -> None:
    with pytest.raises(PoolerError) as e:
        _conf(tmp_path, host=host)
    assert words in e.value.one_line()


def test_port_and_directory_checked(tmp_path: Path) -> None:
    with pytest.raises(PoolerError, match="not a port number"):
        _conf(tmp_path, port="5432\nport = 1")
    odd = tmp_path / "it's"
    with pytest.raises(PoolerError, match="configuration cannot hold"):
        PgpoolSettings(1, 1).conf(server=SERVER, listen_port=1, private_dir=odd, run_dir=odd)
    assert _conf(tmp_path, host="/var/run/postgresql")["backend_hostname0"] == "'/var/run/postgresql'"


def test_password_file_fields() -> None:
    # pgpool's pool_passwd: user:TEXTpassword, a colon or backslash escaped with a backslash
    assert passwd_field("s3cr3t:pw\\x", "password", 124) == "s3cr3t\\:pw\\\\x"
    assert passwd_field("plain", "user", 128) == "plain"
    for bad in ("two\nlines", "cr\r", "nul\0"):
        with pytest.raises(PoolerError, match="line break"):
            passwd_field(bad, "password", 124)
    with pytest.raises(PoolerError, match="longer than pgpool reads"):
        passwd_field("x" * 125, "password", 124)


def _endpoint(**params: str) -> Endpoint:
    return Endpoint({**SERVER, **params}, "pw")


@pytest.mark.parametrize(("endpoint", "words"), [
    (_endpoint(user="ev\nil"), "control character"),
    (_endpoint(dbname="db\n"), "control character"),
    (_endpoint(host="h'x"), "quote or a backslash"),
    (_endpoint(hostaddr="10.0.0.1\n"), "control character"),
    (Endpoint(SERVER, "pass\nword"), "line break"),
    (Endpoint(SERVER, "pw", tls=True), "TLS"),
    (_endpoint(sslmode="require"), "TLS"),
    (Endpoint({"host": "h", "port": "1", "dbname": "d"}, None), "user is not known"),
])
def test_refused_before_anything_is_written(tmp_path: Path, endpoint: Endpoint, words: str) -> None:
    with pytest.raises(PoolerError) as e:
        ManagedPgpool("/usr/sbin/pgpool", (4, 3, 5), endpoint, PgpoolSettings(1, 1), run_as=None,
                      base_dir=str(tmp_path))
    assert words in e.value.one_line() and e.value.one_line().count("\n") == 0
    assert list(tmp_path.iterdir()) == []


def test_endpoints_and_describe(tmp_path: Path) -> None:
    m = ManagedPgpool("/usr/sbin/pgpool", (4, 3, 5), _endpoint(hostaddr="127.0.0.2"), PgpoolSettings(4, 8),
                      run_as=None, base_dir=str(tmp_path))
    try:
        m.port = 7000
        assert m.server_params()["host"] == "127.0.0.2"  # the address the target resolved to
        client = m.client_endpoint
        assert client.params == {"host": "127.0.0.1", "port": "7000", "dbname": "pgknee", "user": "app",
                                 "sslmode": "disable"} and client.password == "pw"
        d = m.describe()
        assert d["auth"] == "scram-sha-256 (pool_passwd)" and d["num_init_children"] == "5" and d["cpus"] == "any"
        assert not m.alive() and m.pid is None and m.pids() == []
        (m.log).write_text("2026-11-26 09:24:28.095: main pid 2919: LOG:  started\n"
                           "2026-11-26 09:24:28.095: main pid 2919: DETAIL:  not kept\n"
                           "2026-11-26 09:24:28.095: main pid 2919: FATAL:  failed to create INET domain socket\n"
                           "2026-11-26 09:24:28.095: main pid 2919: DETAIL:  bind on socket failed with error "
                           "\"Address already in use\"\n"
                           "2026-11-26 09:24:28.095: psql pid 2921: ERROR:  authentication failed\n")
        assert m.log_tail() == ("FATAL: failed to create INET domain socket DETAIL: bind on socket failed with error "
                                "\"Address already in use\" | ERROR: authentication failed")
    finally:
        m.close()
    assert not m.dir.exists()


def test_missing_and_wrong_binaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PoolerError, match="--pgpool /nonexistent/pgpool is not an executable file"):
        find_pgpool("/nonexistent/pgpool")
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(os, "access", lambda _path, _mode: False)
    with pytest.raises(PoolerError) as e:
        find_pgpool()
    assert e.value.message == "pgpool-II is not installed, and a pgpool variant needs it"
    assert e.value.hint is not None and "apt-get install pgpool2" in e.value.hint and "--pgpool PATH" in e.value.hint
    monkeypatch.undo()
    for text, want in (("pgpool-II version 4.3.5 (tamahomeboshi)", ("4.3.5", (4, 3, 5))),
                       ("pgpool-II version 4.5 (x)", ("4.5.0", (4, 5, 0)))):
        assert pgpool_version(_script(tmp_path, text)) == want
    with pytest.raises(PoolerError, match="too old"):
        pgpool_version(_script(tmp_path, "pgpool-II version 4.1.2 (karasukiboshi)"))
    with pytest.raises(PoolerError, match="did not say which pgpool-II"):
        pgpool_version(_script(tmp_path, "PgBouncer 1.18.0"))


def _script(tmp_path: Path, says: str) -> str:
    path = tmp_path / f"pgpool-{abs(hash(says))}"
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(0o755)
    return str(path)


class _Result:
    def __init__(self, status: bytes) -> None:
        self.command_status = status


class _Cursor:
    """A psycopg cursor over several results, as pgpool 4.3.5 answers some SHOW commands."""

    def __init__(self, results: list[tuple[list[str], list[tuple[Any, ...]], bytes]]) -> None:
        self.results = results
        self.i = 0

    @property
    def description(self) -> list[Any]:
        return [type("Col", (), {"name": n})() for n in self.results[self.i][0]]

    @property
    def pgresult(self) -> _Result:
        return _Result(self.results[self.i][2])

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.results[self.i][1]

    def nextset(self) -> bool | None:
        self.i += 1
        return True if self.i < len(self.results) else None


class _Conn:
    def __init__(self, results: list[tuple[list[str], list[tuple[Any, ...]], bytes]], backend_pid: int) -> None:
        self.results = results
        self.info = type("Info", (), {"backend_pid": backend_pid})()
        self.queries: list[str] = []

    def execute(self, query: str) -> _Cursor:
        self.queries.append(query)
        return _Cursor(self.results)


POOLS = ["pool_pid", "start_time", "client_connection_count", "pool_id", "backend_id", "database", "username",
         "backend_connection_time", "client_connection_time", "client_disconnection_time", "client_idle_duration",
         "majorversion", "minorversion", "pool_counter", "pool_backendpid", "pool_connected", "status"]


def _row(pid: int, served: int, backend: int, connected: int, status: str) -> tuple[str, ...]:
    return (str(pid), "2026-11-26 09:24:52", str(served), "0", "0", "pgknee" if backend else "",
            "app" if backend else "", "", "", "", "0", "3", "0", "1", str(backend), str(connected), status)


def test_pool_snapshot_leaves_its_own_child_out() -> None:
    rows = [_row(101, 5, 9001, 1, "Execute command"), _row(102, 2, 9002, 1, "Idle"),
            _row(103, 0, 0, 0, "Wait for connection"), _row(104, 7, 9004, 0, "Wait for connection"),
            _row(105, 1, 9005, 1, "Idle in transaction"), _row(106, 0, 9006, 1, "Execute command")]
    conn = _Conn([(POOLS, rows, b"SELECT 6")], backend_pid=9006)  # the console's own server connection
    snap = pool_snapshot(conn)  # type: ignore[arg-type]
    assert conn.queries == ["SHOW POOL_POOLS"]
    assert snap == PgpoolSnapshot(children=5, busy=3, executing=1, idle_in_transaction=1, server_connections=4,
                                  clients_served=15, console=1, waiting=None)
    # a connection whose server connection no child shows (another pooler's): nothing left out
    assert pool_snapshot(_Conn([(POOLS, rows, b"SELECT 6")], backend_pid=1)).console == 0  # type: ignore[arg-type]


def test_show_takes_the_result_that_completed() -> None:
    # SHOW POOL_PROCESSES on 4.3.5: an empty result without a command tag first, the rows after
    cols = ["pool_pid", "status"]
    conn = _Conn([(cols, [], b""), (cols, [("1", "Idle"), ("2", "Wait for connection")], b"SELECT 2")], 0)
    assert show(conn, "SHOW POOL_PROCESSES") == [  # type: ignore[arg-type]
        {"pool_pid": "1", "status": "Idle"}, {"pool_pid": "2", "status": "Wait for connection"}]


def test_listen_queue_counts_connections_no_one_accepted() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        assert listen_queue(port) == 0
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:  # the handshake's last ACK may reach the listening socket just after connect() returned
            deadline = time.monotonic() + 5
            while listen_queue(port) != 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert listen_queue(port) == 3
            server.accept()[0].close()
            assert listen_queue(port) == 2
        finally:
            for c in clients:
                c.close()


def test_descendants_from_proc() -> None:
    p = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(descendants(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        found = descendants(p.pid)
        assert found[0] == p.pid and len(found) == 2  # the shell and its sleep
        assert os.getpid() not in found
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_a_pgpool_variant_its_mapping_and_its_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgknee.base.errors import UserError
    from pgknee.model.rules import database_concurrency
    from pgknee.plan import Plan, parse_variant
    from pgknee.pooler.lab import Poolers
    from pgknee.pooler.pgpoollab import pgpool_counts

    v = parse_variant("pgpool:pool=8", "extended")
    assert v.pooler is not None and v.pooler.kind == "pgpool" and v.pooler.pool_size == 8
    assert v.pooler.server_connections == 9  # its children, and pgknee's console child
    assert "num_init_children 8 + 1 for pgknee's console, max_pool 1" in v.describe()
    assert database_concurrency(4, "pgpool", 8) == 4 and database_concurrency(12, "pgpool", 8) == 8
    for spec, word in (("pgpool:pool=8:mode=session", "mode"), ("pgpool:pool=8:reserve=2", "reserve"),
                       ("pgpool:pool=8:auth=md5", "auth"), ("pgpool:pool=8:processes=2", "processes")):
        with pytest.raises(UserError, match=f"{word} set a pgbouncer; pgpool-II takes pool="):
            parse_variant(spec, "extended")
    from pgknee.pooler import lab, pgpoollab
    monkeypatch.setattr(lab, "find_pgpool", lambda _explicit: "/usr/sbin/pgpool")  # installed or not
    monkeypatch.setattr(pgpoollab, "pgpool_version", lambda _binary: ("4.3.5", (4, 3, 5)))
    with pytest.raises(UserError, match="16 clients on 8 children would wait for ever") as e:
        Poolers(Plan(variants=(v,), clients=(4, 16))).check_before_start({v.name: []}, embedded=True)
    assert "--clients 1,2,4,8" in (e.value.hint or "")
    Poolers(Plan(variants=(v,), clients=(1, 8))).check_before_start({v.name: []}, embedded=True)
    idle = parse_variant("pgpool:pool=8:idle=10", "extended")
    with pytest.raises(UserError, match="idle sessions through pgpool-II would each hold a child"):
        Poolers(Plan(variants=(idle,), clients=(1, 8))).check_before_start({idle.name: []}, embedded=True)
    # busy children are active clients; the listen queue waits; in a transaction = sv_active
    snap = PgpoolSnapshot(children=8, busy=5, executing=2, idle_in_transaction=1, server_connections=6,
                          clients_served=40, console=1, waiting=3)
    assert pgpool_counts(snap) == (5, 3, 3, 3, 0, 0, 0)
