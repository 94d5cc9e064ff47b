"""A lab of agents on other hosts, for the tests that need one: network namespaces made by the
test, each linked to this one by a veth pair (a real network path, its own addresses, routes and
round trips), a server the test starts that listens on them, with the workload's role and a
PostgreSQL store's. Needs root (namespaces): the fixture skips with the reason otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster, find_bindir

PASSWORD = "agent:s3cret"
KEEPER = "k33p:er"


@dataclass
class Lab:
    server: EmbeddedCluster
    gateways: list[str]  # each agent's way to the server, from its namespace
    namespaces: list[str]

    def address(self, i: int) -> str:
        """Agent i's own address, as the server sees it."""
        head, last = self.gateways[i].rsplit(".", 1)
        return f"{head}.{int(last) + 1}"

    def store_dsn(self, host: str = "127.0.0.1") -> str:
        return f"host={host} port={self.server.port} dbname=results user=keeper password='{KEEPER}'"

    def dsn(self, host: str = "127.0.0.1") -> str:
        return f"postgresql://app@{host}:{self.server.port}/pgknee"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _namespaces(n: int) -> tuple[list[str], list[str]]:
    """n namespaces, each linked to this one by a veth pair in a /30 of 10.231.0.0/16 of this
    test process's own."""
    base = os.getpid() % 250
    names, gateways = [], []
    try:
        for i in range(n):
            tag = f"{os.getpid() % 100000}{i}"
            ns, host, peer = f"pgkt-{tag}", f"pgkh{tag}", f"pgkn{tag}"
            gw, addr = f"10.231.{base}.{i * 4 + 1}", f"10.231.{base}.{i * 4 + 2}"
            _ip("netns", "add", ns)
            names.append(ns)
            _ip("link", "add", host, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", ns)
            _ip("addr", "add", f"{gw}/30", "dev", host)
            _ip("link", "set", host, "up")
            _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", peer)
            _ip("-n", ns, "link", "set", peer, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            gateways.append(gw)
    except BaseException:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        raise
    return names, gateways


@pytest.fixture
def lab() -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("iproute2's ip is not installed (make setup installs it)")
    try:
        names, gateways = _namespaces(2)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot make network namespaces here: {e.stderr.strip()}")
    base = tempfile.mkdtemp(prefix="pgkt-agents-")
    os.chmod(base, 0o755)
    c = EmbeddedCluster(find_bindir(), {"max_connections": "60"}, base_dir=base)
    try:
        c.start()
        with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="postgres", autocommit=True) as conn:
            conn.execute('CREATE DATABASE "pgknee"')
            conn.execute(f"CREATE ROLE app LOGIN PASSWORD '{PASSWORD}'")
            conn.execute("GRANT CREATE ON DATABASE pgknee TO app")
            conn.execute(f"CREATE ROLE keeper LOGIN PASSWORD '{KEEPER}'")
            conn.execute("CREATE DATABASE results OWNER keeper")
            conn.execute("ALTER SYSTEM SET listen_addresses = '*'")  # the agents come through their veth pairs
        hba = c.data / "pg_hba.conf"
        hba.write_text(hba.read_text() + "host all all 10.231.0.0/16 scram-sha-256\n")
        c.stop()
        assert c.revive()
        yield Lab(c, gateways, names)
    finally:
        c.close()
        shutil.rmtree(base, ignore_errors=True)
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def agent(lab: Lab, i: int, logs: Path) -> subprocess.Popen[str]:
    from .conftest import ENV  # (the conftest imports this module: its fixture is everyone's)

    gw = lab.gateways[i]
    env = {**ENV, "PGKNEE_STORE_DSN": lab.store_dsn(gw), "PGPASSWORD": PASSWORD}
    return subprocess.Popen(["ip", "netns", "exec", lab.namespaces[i], sys.executable, "-m", "pgknee", "agent",
                             "--name", f"gen-{i}", "--dsn", lab.dsn(gw), "--wait", "120s", "--keep-logs", str(logs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
