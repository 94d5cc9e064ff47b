"""--server-ssh against a real sshd the test starts on a free loopback port (its own host key,
authorized_keys for a key it generates, all in a temporary directory; the user's ssh files are
not touched): the server's machine and OS read over ssh, and a refused key said as the reason."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgknee.collect.osproc import read_meminfo
from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, ENV, QUICK, dsn_of, pgknee, sql, wait_for

SSHD = "/usr/sbin/sshd"
RUN = ("--clients", "2", "--duration", "2s", "--scale", "0.1", "--quiet", "--no-waits", "--sample-interval", "0",
       "--os-interval", "0.2s", *QUICK)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def _client_config(cfg: Path, port: int, key: Path, known_hosts: Path) -> Path:
    cfg.write_text(f"Host pgknee-test\n  HostName 127.0.0.1\n  Port {port}\n  User {os.environ.get('USER', 'root')}\n"
                   f"  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts}\n"
                   "  StrictHostKeyChecking yes\n  HostKeyAlias pgknee-test\n")
    cfg.chmod(0o600)
    return cfg


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A private sshd on a free loopback port: the client configuration of an authorised key,
    that of a key it does not know, and that of a client that does not know its host key."""
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        pytest.skip("openssh-server and openssh-client are not installed (scripts/setup-system.sh --browsers)")
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    host_pub = _keygen(d / "host_ed25519")
    (d / "authorized_keys").write_text(_keygen(d / "id_ed25519") + "\n")
    _keygen(d / "stranger_ed25519")
    (d / "known_hosts").write_text(f"pgknee-test {' '.join(host_pub.split()[:2])}\n")
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_ed25519'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    p = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and p.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        if p.poll() is not None:
            pytest.skip(f"sshd could not be started: {p.stderr.read() if p.stderr else ''}")
        yield (_client_config(d / "good", port, d / "id_ed25519", d / "known_hosts"),
               _client_config(d / "stranger", port, d / "stranger_ed25519", d / "known_hosts"),
               _client_config(d / "unknown_host", port, d / "id_ed25519", d / "no_known_hosts"))
    finally:
        p.terminate()
        p.communicate(timeout=10)


def test_the_servers_machine_and_os_over_ssh(server: EmbeddedCluster, sshd: tuple[Path, Path, Path],
                                             tmp_path: Path) -> None:
    cfg = sshd[0]
    store = tmp_path / "ssh.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_machine_ssh", "--store", str(store), *RUN,
               "--server-ssh", "pgknee-test", "--server-ssh-config", str(cfg), env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    env = {str(k): str(v) for k, v in sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'server.%'")}
    assert env["server.machine.cpus"] == str(os.cpu_count()) and env["server.machine.cpus_source"] == "ssh pgknee-test"
    assert env["server.os"] == "ssh pgknee-test every 0.2 s"
    rows = sql(store, "SELECT _phase, cpu_idle, mem_total_kb, ctx_per_s FROM server_os_samples")
    assert len([x for x in rows if x[0] == "bench"]) >= 3, rows
    assert all(0 <= idle <= 100 and mem == read_meminfo()["MemTotal"] and ctx > 0 for _, idle, mem, ctx in rows)
    assert f"server: {os.cpu_count()} CPUs (ssh pgknee-test)" in r.out and "System — the server: " in r.out
    assert subprocess.run(["pgrep", "-f", str(cfg)], capture_output=True).returncode == 1  # ssh ended with pgknee


@pytest.mark.parametrize(("which", "said"), [(1, "Permission denied (publickey)"),
                                            (2, "Host key verification failed")])
def test_a_refused_key_or_an_unknown_host_key_is_the_reason(server: EmbeddedCluster, sshd: tuple[Path, Path, Path],
                                                           tmp_path: Path, which: int, said: str) -> None:
    store = tmp_path / "refused.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_machine_ssh", "--store", str(store), *RUN,
               "--server-ssh", "pgknee-test", "--server-ssh-config", str(sshd[which]), env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    env = {str(k): str(v) for k, v in sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'server.%'")}
    assert "server.machine.cpus" not in env
    why = env["server.machine.cpus_source"]
    assert why.startswith("unknown: ssh pgknee-test: ") and said in why, why
    assert "pg_read_file is not allowed to this role" in why  # and then SQL, which this role may not either
    assert env["server.os"].startswith("not sampled: ssh pgknee-test: ")
    assert "server: CPUs unknown (ssh pgknee-test: " in r.out


def _running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def test_ssh_dies_with_pgknee(server: EmbeddedCluster, sshd: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """pgknee killed (SIGKILL) mid-step: its ssh gets the kernel's parent-death signal, and the script
    on the server's side ends at its next line."""
    cfg = sshd[0]
    p = subprocess.Popen([sys.executable, "-m", "pgknee", "run", "--dsn", dsn_of(server), "--schema",
                          "bench_machine_ssh", "--store", str(tmp_path / "killed.db"), *RUN, "--duration", "30s",
                          "--server-ssh", "pgknee-test", "--server-ssh-config", str(cfg)], cwd=tmp_path,
                         env={**ENV, **APP_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # the remote python3 may be a shim's (pyenv): matched by its arguments
        assert wait_for(lambda: _running(f"ssh -F {cfg}") and _running("python.* - 0[.]2$"), 60)
        assert wait_for(lambda: sql(tmp_path / "killed.db", "SELECT count(*) FROM steps")[0][0] == 1, 60)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
    assert wait_for(lambda: not _running(f"ssh -F {cfg}") and not _running("python.* - 0[.]2$"), 15)
