"""pgbouncer in the lab: a managed instance in front of the target (config and auth
files in a private directory, every setting that distorts a sweep set explicitly,
started per step and always stopped), or a user's own, reached by DSN.

Three identities, none of them on a command line:
- the client user pgbench logs in as (a random password in the auth file);
- the admin user pgknee samples the console with (a random password);
- the server user pgbouncer logs in to the target as (the target's own credentials).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from pgknee.base.errors import PoolerError
from pgknee.collect.pooler import admin_connect
from pgknee.pooler.binary import PGBOUNCER
from pgknee.system import proc, safefs
from pgknee.targets.base import Endpoint
from pgknee.targets.local import free_port, reachable_by_others

CLIENT_USER = "pgknee_client"
ADMIN_USER = "pgknee_admin"
VIRTUAL_DB = "pgknee"
MODES = ("session", "transaction", "statement")
# pgbouncer carries protocol-level prepared statements across pooled server connections
# from 1.21 on (max_prepared_statements); before that they break in transaction and
# statement modes.
PREPARED_MIN_VERSION = (1, 21, 0)
# several processes on one port: so_reuseport from 1.12; from 1.19 they can be peers, each
# forwarding a cancel request to the process that holds its client (peer_id, [peers])
REUSEPORT_MIN_VERSION = (1, 12, 0)
PEERING_MIN_VERSION = (1, 19, 0)


def own_address(process: int) -> str:
    """The loopback address only process `process` (1..64) of a managed pgbouncer listens on
    besides the shared 127.0.0.1: its console, reached over TCP with no file in between (every
    address of 127.0.0.0/8 is this machine's on Linux)."""
    return f"127.0.1.{int(process)}"


def find_pgbouncer(explicit: str | None = None) -> str:
    return PGBOUNCER.find(explicit)


def pgbouncer_version(binary: str) -> tuple[str, tuple[int, int, int]]:
    return PGBOUNCER.version(binary)


@dataclass(frozen=True)
class PoolerSettings:
    """What one managed pgbouncer is told: everything that shapes a sweep, explicit."""

    mode: str
    pool_size: int
    reserve: int
    max_clients: int  # the largest client count it must accept
    query_wait_timeout_s: int  # longer than a step: a client never gives up mid-step
    prepared_statements: bool  # protocol-level prepared statements in use (1.21+ only)
    auth: str = "scram-sha-256"  # client logins
    processes: int = 1  # on one port (so_reuseport), each with its own pool

    def ini(self, *, server: dict[str, str], listen_port: int, private_dir: Path,
            version: tuple[int, int, int], tls: dict[str, str] | None = None, process: int = 1) -> str:
        """The whole pgbouncer.ini of process `process` (1..processes). Every value from outside
        pgknee (the server's host, port, database and user) is checked and quoted: none can add a
        line or a setting."""
        db = {k: server[k] for k in ("host", "port", "dbname", "user") if server.get(k)}
        db.update(pool_size=str(self.pool_size), pool_mode=self.mode, reserve_pool=str(self.reserve),
                  max_db_connections=str(self.pool_size + self.reserve))
        conn = " ".join(f"{k}={_ini_value(v)}" for k, v in db.items())
        lines = [
            "; written by pgknee for one step; removed when it ends",
            "[databases]",
            f"{VIRTUAL_DB} = {conn}",
            "",
            "[pgbouncer]",
            *self._listen(int(listen_port), int(process), version),
            "unix_socket_dir =",  # no socket: pgknee connects over TCP, and writes nowhere else
            f"auth_type = {self.auth}",
            f"auth_file = {_ini_path(private_dir / 'users.txt')}",
            f"admin_users = {ADMIN_USER}",
            f"stats_users = {ADMIN_USER}",
            f"pool_mode = {self.mode}",
            f"default_pool_size = {int(self.pool_size)}",
            "min_pool_size = 0",
            f"reserve_pool_size = {int(self.reserve)}",
            "reserve_pool_timeout = 5",
            f"max_db_connections = {int(self.pool_size + self.reserve)}",
            # clients plus pgknee's own console connections, with room to spare
            f"max_client_conn = {int(self.max_clients) + 20}",
            f"query_wait_timeout = {int(self.query_wait_timeout_s)}",
            *_FIXED,
        ]
        lines += [f"{k} = {v}" for k, v in (tls or {"server_tls_sslmode": "disable"}).items()]
        if version >= PREPARED_MIN_VERSION:
            lines.append(f"max_prepared_statements = {1000 if self.prepared_statements else 0}")
        if self.processes > 1 and version >= PEERING_MIN_VERSION:
            lines += ["", "[peers]", *(f"{i} = host={own_address(i)} port={int(listen_port)}"
                                       for i in range(1, self.processes + 1))]
        return "\n".join(lines) + "\n"

    def _listen(self, port: int, process: int, version: tuple[int, int, int]) -> list[str]:
        """One process: 127.0.0.1. Several: each also on its own loopback address (its console),
        the shared port opened with so_reuseport (the kernel spreads new connections over the
        processes; it shares a port only between sockets of the same user), peers from 1.19."""
        if self.processes == 1:
            return ["listen_addr = 127.0.0.1", f"listen_port = {port}"]
        lines = [f"listen_addr = 127.0.0.1,{own_address(process)}", f"listen_port = {port}", "so_reuseport = 1"]
        if version >= PEERING_MIN_VERSION:
            lines.append(f"peer_id = {process}")
        return lines


# every other setting that shapes a sweep, explicit (pgbouncer's defaults distort it: NOTES.md);
# no logfile or pidfile: it logs to its standard error, a file of pgknee's
_FIXED = ("max_user_connections = 0", "query_timeout = 0", "idle_transaction_timeout = 0", "client_idle_timeout = 0",
          "client_login_timeout = 300", "server_idle_timeout = 600", "server_lifetime = 3600",
          "server_login_retry = 1", "server_connect_timeout = 15", "server_round_robin = 0", "listen_backlog = 4096",
          "ignore_startup_parameters = extra_float_digits", "log_connections = 0", "log_disconnections = 0",
          "log_pooler_errors = 1", "stats_period = 60")


def _ini_value(v: str) -> str:
    """A value of the [databases] connection string: plain, or single-quoted with quotes
    doubled (pgbouncer's own rule). A control character (a newline would start a new line of
    the file) is refused."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in v):
        raise PoolerError("a connection parameter of the server holds a control character, which cannot go "
                          "into pgbouncer's configuration", "check the DSN's host, database and user")
    if re.fullmatch(r"[A-Za-z0-9_./:-]+", v):
        return v
    return "'" + v.replace("'", "''") + "'"


def _ini_path(p: Path) -> str:
    text = str(p)
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", text):
        raise PoolerError(f"pgknee's directory {text!r} has characters pgbouncer's configuration cannot hold",
                          "set TMPDIR to a plain path such as /tmp")
    return text


# the DSN's TLS settings and what pgbouncer's server side calls them; others cannot be carried
_TLS_FILES = {"sslrootcert": "server_tls_ca_file", "sslcert": "server_tls_cert_file",
              "sslkey": "server_tls_key_file"}
_TLS_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_NOT_CARRIED = {"sslcrl": "a certificate revocation list", "sslcrldir": "a certificate revocation list",
                "sslpassword": "a key password", "sslnegotiation": "direct TLS negotiation",
                "require_auth": "a required authentication method", "gssencmode": "GSSAPI encryption",
                "channel_binding": "channel binding", "sslcertmode": "a client certificate mode"}


def server_tls(params: dict[str, str], tls_in_use: bool) -> dict[str, str]:
    """pgbouncer's server-side TLS settings for the connection the target resolved to: the same
    mode (at least require when the direct connection used TLS: never plaintext behind the
    user's back) and the same files. A setting pgbouncer cannot carry refuses the variant."""
    for key, what in _NOT_CARRIED.items():
        value = params.get(key)
        if value and not (key == "gssencmode" and value in ("disable", "prefer")) \
                and not (key == "channel_binding" and value in ("disable", "prefer")) \
                and not (key == "sslnegotiation" and value == "postgres") \
                and not (key == "sslcertmode" and value in ("allow", "disable")):
            raise PoolerError(f"the DSN sets {key}={value} ({what}), which pgbouncer cannot carry to the server: "
                              "the pooled steps would connect differently from the direct ones",
                              "drop it from the DSN, or run the pooled variant through your own pgbouncer "
                              "(pooled-external)")
    mode = params.get("sslmode", "prefer")
    if mode not in _TLS_MODES:
        raise PoolerError(f"unknown sslmode {mode!r} in the DSN")
    if tls_in_use and _TLS_MODES.index(mode) < _TLS_MODES.index("require"):
        mode = "require"
    elif not tls_in_use and mode in ("allow", "prefer"):
        mode = "disable"  # as the direct connection did: no TLS
    out = {"server_tls_sslmode": mode}
    for key, setting in _TLS_FILES.items():
        if params.get(key):
            path = "/etc/ssl/certs/ca-certificates.crt" if params[key] == "system" else params[key]
            out[setting] = _ini_path(Path(path))
    if params.get("ssl_min_protocol_version", "").lower() == "tlsv1.3":
        out["server_tls_protocols"] = "tlsv1.3"
    return out


def _auth_line(user: str, password: str) -> str:
    return '"' + user.replace('"', '""') + '" "' + password.replace('"', '""') + '"'


def scram_secret(password: str, *, iterations: int = 4096, salt: bytes | None = None) -> str:
    """A SCRAM-SHA-256 verifier as PostgreSQL stores it (RFC 5802/7677). pgbouncer given the
    verifier checks a login with a few HMACs; given the plain password it derives the key
    (4096 PBKDF2 rounds) at every login, on its one thread: 5000 clients took 37 s to connect."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}${b64(stored_key).decode()}:{b64(server_key).decode()}"


class ManagedPgbouncer:
    """A pgbouncer in front of `server`, for one step: one process, or `settings.processes` on
    one port. Its directory is pgknee's own: the configuration (no secrets) root-owned, the auth
    file and TLS copies given to pgbouncer's user through their descriptors, each process's log
    a file pgknee opened for its standard error. pgbouncer itself writes nothing: no socket, no
    pidfile (pgknee knows each process's pid, and its registry stops them), no logfile."""

    def __init__(self, binary: str, version: tuple[int, int, int], server: Endpoint, settings: PoolerSettings,
                 *, run_as: proc.RunAs | None, base_dir: str | None = None,
                 cpus: frozenset[int] | None = None) -> None:
        self.binary = binary
        self.version = version
        self.server = server
        self.settings = settings
        self.run_as = run_as
        self.cpus = cpus
        self.tls = server_tls(server.params, server.tls)  # refused before anything is written
        base = Path(base_dir or tempfile.gettempdir())
        if run_as is not None and not reachable_by_others(base):
            raise PoolerError(f"pgbouncer runs as user {run_as.name}, which cannot reach {base}",
                              "set TMPDIR to a directory every user can traverse, such as /tmp")
        self.dir = safefs.private_dir("pgknee-pgbouncer-", base=base_dir, reachable_by=run_as)
        self.client_password = secrets.token_urlsafe(18)
        self.admin_password = secrets.token_urlsafe(18)
        self.port = 0
        self._procs: list[subprocess.Popen[bytes] | None] = [None] * settings.processes

    @property
    def processes(self) -> range:
        return range(1, self.settings.processes + 1)

    def _file(self, process: int, suffix: str) -> Path:
        return self.dir / (f"pgbouncer{suffix}" if process == 1 else f"pgbouncer-{process}{suffix}")

    @property
    def log(self) -> Path:
        return self._file(1, ".log")

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Write the files, start pgbouncer, wait until its console answers. A port taken
        between choosing and binding is retried on another port."""
        self._write_private_files()
        for attempt in range(3):
            self.port = free_port()
            for i in self.processes:
                safefs.replace_file(self._file(i, ".ini"), self.settings.ini(
                    server=self._server_params(), listen_port=self.port, private_dir=self.dir, version=self.version,
                    tls=self._tls_files(), process=i).encode(), mode=0o644)
            if self._start_all():
                return
            tail = self.log_tail()
            self.stop()
            if attempt == 2 or "Address already in use" not in tail:
                raise PoolerError(f"pgbouncer did not start: {tail or 'no message'}",
                                  "see the message; run 'pgbouncer --version' to check the installation")

    def _start_all(self) -> bool:
        """Every process started and answering its console; False if one exited at once."""
        for i in self.processes:
            self._spawn(i)
        return all(self._answering(i) for i in self.processes)

    def _server_params(self) -> dict[str, str]:
        """host as the target resolved it: its address when known (the same server every other
        client reached), its name when the certificate must match it."""
        params = dict(self.server.params)
        if params.get("hostaddr") and self.tls.get("server_tls_sslmode") != "verify-full":
            params["host"] = params["hostaddr"]
        return params

    def _tls_files(self) -> dict[str, str]:
        """The TLS settings, with the files copied where pgbouncer's user can read them."""
        out = dict(self.tls)
        if self.run_as is None:
            return out
        for setting in ("server_tls_ca_file", "server_tls_cert_file", "server_tls_key_file"):
            if setting in out:
                dst = self.dir / setting.removeprefix("server_tls_")
                if not dst.exists():
                    safefs.create_file(dst, Path(out[setting]).read_bytes(), owner=self.run_as)
                out[setting] = str(dst)
        return out

    def _write_private_files(self) -> None:
        def secret(user: str, password: str) -> str:
            if self.settings.auth == "md5":
                return "md5" + hashlib.md5((password + user).encode()).hexdigest()  # noqa: S324 - pgbouncer's md5
            return scram_secret(password)

        users = [_auth_line(CLIENT_USER, secret(CLIENT_USER, self.client_password)),
                 _auth_line(ADMIN_USER, secret(ADMIN_USER, self.admin_password))]
        server_user = self.server.params.get("user")
        if server_user and self.server.password is not None:
            users.append(_auth_line(server_user, self.server.password))
        safefs.create_file(self.dir / "users.txt", ("\n".join(users) + "\n").encode(), owner=self.run_as)
        for i in self.processes:
            if not self._file(i, ".log").exists():
                os.close(safefs.open_log(self._file(i, ".log")))

    def _spawn(self, process: int) -> None:
        log = os.open(self._file(process, ".log"), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            self._procs[process - 1] = proc.spawn(
                [self.binary, str(self._file(process, ".ini"))], run_as=self.run_as, die_with_parent=signal.SIGTERM,
                stdout=subprocess.DEVNULL, stderr=log, cwd=str(self.dir), cpus=self.cpus)
        finally:
            os.close(log)

    def _answering(self, process: int) -> bool:
        p = self._procs[process - 1]
        assert p is not None
        answering = proc.wait_answering(p, lambda: self._answers(process), timeout=15)
        if answering is None:
            self.stop()
            raise PoolerError(f"pgbouncer{self._which(process)} did not answer within 15 s",
                              f"see {self._file(process, '.log')}")
        if not answering:
            self._procs[process - 1] = None
        return answering

    def _which(self, process: int) -> str:
        return f" process {process} of {self.settings.processes}" if self.settings.processes > 1 else ""

    def _answers(self, process: int) -> bool:
        try:
            with admin_connect(self.admin_endpoints[process - 1], timeout=2) as c:
                c.execute("SHOW VERSION")
            return True
        except (psycopg.Error, PoolerError):
            return False

    def alive(self) -> bool:
        """Every process still running (one gone fails the step: its clients lost their connections)."""
        return all(p is not None and p.poll() is None for p in self._procs)

    @property
    def pid(self) -> int | None:
        return self.pids[0] if self.pids else None

    @property
    def pids(self) -> tuple[int, ...]:
        """The running processes' pids, in process order."""
        return tuple(p.pid for p in self._procs if p is not None)

    def log_tail(self, n: int = 3) -> str:
        """The last errors in the logs; with several processes, which one exited and its last words."""
        dead = {i: p.pid for i in self.processes if (p := self._procs[i - 1]) is not None and p.poll() is not None}
        if not dead or self.settings.processes == 1:
            return " | ".join(filter(None, (_log_errors(self._file(i, ".log"), n) for i in self.processes)))
        return " | ".join(f"process {i} of {self.settings.processes} (pid {pid}) exited: "
                          f"{_log_errors(self._file(i, '.log'), n) or 'no message in its log'}"
                          for i, pid in dead.items())

    def stop(self) -> None:
        procs, self._procs = self._procs, [None] * self.settings.processes
        for p in procs:
            if p is not None:
                proc.stop(p, grace=5.0)  # SIGTERM: pgbouncer exits at once, closing its connections

    def close(self) -> None:
        self.stop()
        safefs.remove_private_dir(self.dir)

    # ---- endpoints ---------------------------------------------------------------------------
    @property
    def client_endpoint(self) -> Endpoint:
        """Where pgbench connects: the pooler, as the client user."""
        return Endpoint({"host": "127.0.0.1", "port": str(self.port), "dbname": VIRTUAL_DB, "user": CLIENT_USER},
                        self.client_password)

    @property
    def admin_endpoint(self) -> Endpoint:
        """Process 1's console (the only one's, with one process)."""
        return self.admin_endpoints[0]

    @property
    def admin_endpoints(self) -> list[Endpoint]:
        """Each process's console: on the shared address with one process, else on its own."""
        hosts = ["127.0.0.1"] if self.settings.processes == 1 else [own_address(i) for i in self.processes]
        return [Endpoint({"host": h, "port": str(self.port), "dbname": "pgbouncer", "user": ADMIN_USER},
                         self.admin_password) for h in hosts]

    def admin_connect(self, timeout: float = 5.0) -> psycopg.Connection[Any]:
        return admin_connect(self.admin_endpoint, timeout)

    def describe(self) -> dict[str, str]:
        s = self.settings
        return {"pool_mode": s.mode, "pool_size": str(s.pool_size), "reserve_pool": str(s.reserve),
                "processes": str(s.processes),
                "max_client_conn": str(s.max_clients + 20), "max_db_connections": str(s.pool_size + s.reserve),
                "query_wait_timeout": str(s.query_wait_timeout_s), "auth_type": s.auth,
                "cpus": proc.cpus_said(self.cpus),
                "server_tls_sslmode": self.tls["server_tls_sslmode"]}


def _log_errors(log: Path, n: int) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines()
                 if ln.strip() and (" ERROR " in ln or " FATAL " in ln or " WARNING " in ln or "error" in ln)]
    except OSError:
        return ""
    return " | ".join(re.sub(r"^\S+ \S+ \S+ \[\d+\] ", "", ln) for ln in lines[-n:])
