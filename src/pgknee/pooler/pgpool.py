"""pgpool-II in the lab: a managed instance in front of the target, the analogue of the managed
pgbouncer (pooler/pgbouncer.py): its files in a private directory, every setting that shapes a
sweep explicit, started per step as the server's unprivileged user and always stopped.

pgpool is a pool of processes: each of num_init_children preforked children serves one client at
a time, for the client's whole session, on a server connection it caches. A client beyond the
children waits in the kernel's listen queue until a child is free: pgbench, which connects all its
clients before it starts, waits for ever when it has more clients than pgpool has children.

One identity: pgbench logs in to pgpool as the target's own user with the target's own password
(pgpool checks it with SCRAM against pool_passwd, a 0600 file of pgpool's user, and logs in to the
server with it). The password is in that file alone: never on a command line or in an environment.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from pgknee.base.errors import PoolerError, first_line
from pgknee.collect.osproc import descendants, group_members, listen_queue, orphaned_shm
from pgknee.pooler.binary import PGPOOL
from pgknee.system import proc, safefs
from pgknee.targets.base import Endpoint
from pgknee.targets.local import free_port, reachable_by_others

MIN_VERSION = (4, 3, 0)  # backend_clustering_mode came with 4.2; SHOW POOL_POOLS' status and counts with 4.3
# pool_passwd's fields are read into 128-byte tokens (src/auth/pool_passwd.c); the password's starts with TEXT
MAX_PASSWORD_BYTES, MAX_USER_BYTES = 124, 128
CONSOLE_APP = "pgknee:console"
SHOW_POOLS = "SHOW POOL_POOLS"
WAITING = "Wait for connection"  # a child with no client (SHOW POOL_POOLS' status column)


def find_pgpool(explicit: str | None = None) -> str:
    return PGPOOL.find(explicit)


def pgpool_version(binary: str) -> tuple[str, tuple[int, int, int]]:
    """pgpool-II's version; one older than 4.3 is refused."""
    text, ver = PGPOOL.version(binary)
    if ver < MIN_VERSION:
        raise PoolerError(f"pgpool-II {text} is too old: pgknee needs 4.3 or later "
                          "(backend_clustering_mode; SHOW POOL_POOLS' status)",
                          "install a newer pgpool2 package, or pass --pgpool PATH")
    return text, ver


@dataclass(frozen=True)
class PgpoolSettings:
    """What one managed pgpool is told; everything that shapes a sweep, explicit.

    pool_size (the server connections the clients may use) maps onto pgpool as:
    - backend_clustering_mode = 'raw', one backend (the target), DISALLOW_TO_FAILOVER, and no
      failover on a backend error: pgpool passes queries through, never marks the server down;
    - num_init_children = pool_size (+ 1 with `console`: the child pgknee's own console
      connection holds for the whole step, taken before any client connects; SHOW POOL_POOLS
      needs a child like any client, and waits behind the clients when all are busy);
    - max_pool = 1, connection_cache = on: one user/database pair, so each child caches one server
      connection and reuses it for every client it serves: the server sees at most
      num_init_children connections;
    - child_life_time, child_max_connections, connection_life_time, client_idle_limit and
      reserved_connections 0: no child or server connection is recycled mid-sweep, no client is
      cut off or refused (one beyond the children waits);
    - listen_backlog_multiplier: the listen queue (multiplier x num_init_children, capped by the
      kernel's net.core.somaxconn) holds max_clients;
    - load balancing, health and replication checks, watchdog, query and relation caches, temporary
      and unlogged table checks off (no catalog queries of pgpool's own);
    - log to standard error (a file of pgknee's); sockets, pid and status files in the private
      directory; pcp on its Unix socket alone, there, with no user.
    """

    pool_size: int
    max_clients: int  # the largest client count it must queue
    console: bool = True

    @property
    def console_children(self) -> int:
        """The child kept for pgknee's console session (SHOW POOL_POOLS), if any."""
        return 1 if self.console else 0

    @property
    def num_init_children(self) -> int:
        return self.pool_size + self.console_children

    @property
    def backlog_multiplier(self) -> int:
        # the clients beyond the children and pgknee's own connections wait in the listen queue
        return max(2, math.ceil((self.max_clients + 2) / self.num_init_children))

    def conf(self, *, server: dict[str, str], listen_port: int, private_dir: Path, run_dir: Path) -> str:
        """The whole pgpool.conf. Every value from outside pgknee (the server's host and port)
        is checked and quoted: none can add a line or a setting. Its database and user go to no
        configuration file: clients name them, and pool_hba.conf says 'all'."""
        host = server.get("host") or "/var/run/postgresql"
        port = _port(server.get("port") or "5432")
        lines = [
            "# written by pgknee for one step; removed when it ends",
            "backend_clustering_mode = 'raw'", f"backend_hostname0 = {_conf_string(host, 'host')}",
            f"backend_port0 = {port}", "backend_weight0 = 1", "backend_flag0 = 'DISALLOW_TO_FAILOVER'",
            "listen_addresses = '127.0.0.1'", f"port = {int(listen_port)}", f"socket_dir = {_conf_path(run_dir)}",
            "pcp_listen_addresses = ''",  # no TCP: pcp's Unix socket alone, below
            f"pcp_port = {_pcp_port(listen_port)}",  # names that socket only
            f"pcp_socket_dir = {_conf_path(run_dir)}",
            f"pid_file_name = {_conf_path(run_dir / 'pgpool.pid')}", f"logdir = {_conf_path(run_dir)}",
            f"memqcache_oiddir = {_conf_path(run_dir / 'oiddir')}", "enable_pool_hba = on",
            f"pool_passwd = {_conf_path(private_dir / 'pool_passwd')}",
            "allow_clear_text_frontend_auth = off",
            f"num_init_children = {self.num_init_children}", "max_pool = 1",
            f"listen_backlog_multiplier = {self.backlog_multiplier}",
            *_FIXED,
        ]
        return "\n".join(lines) + "\n"

    def describe(self) -> dict[str, str]:
        n = self.num_init_children
        return {"pool_size": str(self.pool_size), "num_init_children": str(n), "max_pool": "1",
                "console_child": str(self.console_children), "connection_cache": "on",
                "backend_clustering_mode": "raw", "listen_backlog_multiplier": str(self.backlog_multiplier),
                "listen_backlog": str(self.backlog_multiplier * n), "child_life_time": "0",
                "child_max_connections": "0", "connection_life_time": "0", "client_idle_limit": "0",
                "reserved_connections": "0", "load_balance_mode": "off", "max_clients": str(self.max_clients)}


# every other setting that shapes a sweep, explicit (pgpool's defaults recycle children every 5
# minutes, cut a client off nowhere but fail the backend over on an error, and check the catalog)
_FIXED = ("connection_cache = on", "child_life_time = 0", "child_max_connections = 0", "connection_life_time = 0",
          "client_idle_limit = 0", "reserved_connections = 0", "serialize_accept = off",
          "reset_query_list = 'ABORT; DISCARD ALL'", "authentication_timeout = 300", "connect_timeout = 10000",
          "load_balance_mode = off", "statement_level_load_balance = off", "replicate_select = off",
          "insert_lock = off", "check_temp_table = none", "check_unlogged_table = off",
          "failover_on_backend_error = off", "failover_on_backend_shutdown = off", "auto_failback = off",
          "failover_command = ''", "failback_command = ''", "health_check_period = 0", "sr_check_period = 0",
          "use_watchdog = off", "memory_cache_enabled = off", "enable_shared_relcache = off",
          # the query cache's shared memory is sized whether or not the cache is used: the smallest
          "memqcache_method = 'shmem'", "memqcache_total_size = 1048576", "memqcache_cache_block_size = 1048576",
          "memqcache_maxcache = 409600", "memqcache_max_num_cache = 1000",
          "ssl = off", "log_destination = 'stderr'", "logging_collector = off", "log_line_prefix = '%m: %a pid %p: '",
          "log_min_messages = warning", "client_min_messages = notice", "log_connections = off",
          "log_disconnections = off", "log_hostname = off", "log_statement = off", "log_per_node_statement = off",
          "log_client_messages = off")


def _refuse_control(v: str, what: str) -> None:
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in v):
        raise PoolerError(f"the server's {what} holds a control character, which cannot go into pgpool's "
                          "configuration", "check the DSN's host, database and user")


def _conf_string(v: str, what: str) -> str:
    """A single-quoted value of pgpool.conf. pgpool 4.3's parser has no escape: it strips the
    outer quotes and keeps the rest as written (src/config/pool_config.l, extract_string), a
    backslash lets the next character through, and a newline ends the line. So a control
    character, a quote or a backslash is refused, never escaped."""
    _refuse_control(v, what)
    if "'" in v or "\\" in v:
        raise PoolerError(f"the server's {what} {v!r} holds a quote or a backslash, which pgpool's configuration "
                          "cannot hold", "connect to the server by a plain host name or address")
    return f"'{v}'"


def _conf_path(p: Path) -> str:
    text = str(p)
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", text):
        raise PoolerError(f"pgknee's directory {text!r} has characters pgpool's configuration cannot hold",
                          "set TMPDIR to a plain path such as /tmp")
    return f"'{text}'"


def _port(v: str) -> int:
    if not v.isdigit() or not 0 < int(v) < 65536:
        raise PoolerError(f"the server's port {v!r} is not a port number", "check the DSN's port")
    return int(v)


def _pcp_port(listen_port: int) -> int:
    # pcp's socket name (.s.PGSQL.<port>, beside pgpool's own): any port but pgpool's; no TCP on it
    return listen_port + 1 if listen_port < 65535 else listen_port - 1


def passwd_field(v: str, what: str, limit: int) -> str:
    """A field of pool_passwd (user:TEXTpassword): a colon or backslash escaped with a backslash
    (pgpool's getNextToken); a line break, which would start another entry, refused, as is a
    field longer than pgpool reads."""
    if any(ch in v for ch in "\n\r\0"):
        raise PoolerError(f"the server's {what} holds a line break, which pgpool's password file cannot hold",
                          "use a password without one for the pgpool variant")
    if len(v.encode()) > limit:
        raise PoolerError(f"the server's {what} is longer than pgpool reads ({limit} bytes)",
                          "use a shorter one for the pgpool variant")
    return v.replace("\\", "\\\\").replace(":", "\\:")


@dataclass(frozen=True)
class PgpoolSnapshot:
    """One look at pgpool's children (SHOW POOL_POOLS), the console's own child left out."""

    children: int  # pgpool children serving clients (num_init_children, less the console's)
    busy: int  # children with a client connected
    executing: int  # ... whose client's query runs now
    idle_in_transaction: int
    server_connections: int  # server connections the children hold (cached ones included)
    clients_served: int  # client sessions the children ended since they started (a counter)
    console: int  # children left out: the one the query itself occupies (1), or 0
    waiting: int | None = None  # clients in the listen queue, waiting for a child (None: not read)


def show(conn: psycopg.Connection[Any], what: str) -> list[dict[str, Any]]:
    """A pgpool SHOW as dicts by column name, over the simple protocol (the extended one fails). 4.3.5
    answers SHOW POOL_PROCESSES with an empty result, then the rows: the one that completed counts."""
    cur = conn.execute(what)
    rows: list[dict[str, Any]] = []
    while True:
        names = [d.name for d in cur.description or ()]
        got = cur.fetchall() if names else []
        if cur.pgresult is not None and cur.pgresult.command_status:
            rows = [dict(zip(names, row, strict=True)) for row in got]
        if not cur.nextset():
            return rows


def pool_snapshot(conn: psycopg.Connection[Any], listen_port: int | None = None) -> PgpoolSnapshot:
    """SHOW POOL_POOLS (a row per child, pool slot and backend) by child. The query occupies a child:
    the one holding this connection's server pid (pgpool passes it on) is left out, as `console`."""
    own = str(conn.info.backend_pid)
    by_child: dict[str, list[dict[str, Any]]] = {}
    for r in show(conn, SHOW_POOLS):
        by_child.setdefault(str(r["pool_pid"]), []).append(r)
    mine = [pid for pid, rows in by_child.items() if any(str(r["pool_backendpid"]) == own for r in rows)]
    others = [rows for pid, rows in by_child.items() if pid not in mine]
    status = [rows[0]["status"] for rows in others]
    return PgpoolSnapshot(
        children=len(others), busy=sum(s != WAITING for s in status), executing=status.count("Execute command"),
        idle_in_transaction=status.count("Idle in transaction"),
        server_connections=sum(str(r["pool_backendpid"]) not in ("", "0") for rows in others for r in rows),
        clients_served=sum(int(rows[0]["client_connection_count"] or 0) for rows in others), console=len(mine),
        waiting=listen_queue(listen_port) if listen_port else None)


def _checked(read: Callable[[], PgpoolSnapshot]) -> PgpoolSnapshot:
    """A snapshot, or one line when SHOW POOL_POOLS lacks a column pgknee reads."""
    try:
        return read()
    except KeyError as e:
        raise PoolerError(f"pgpool's SHOW POOL_POOLS has no column {e.args[0]!r}",
                          "use pgpool-II 4.3 or later (--pgpool PATH)") from None


class ManagedPgpool:
    """One pgpool in front of `server`, for one step. Its directory is pgknee's own: pgpool.conf,
    pool_hba.conf and an empty pcp.conf (no secrets) root-owned, the password file pgpool's user's
    (0600), the log a file pgknee opened for its standard error, and a directory of pgpool's user
    for what pgpool writes: its sockets (pool_hba.conf lets no Unix-socket login in), pid file and
    status file."""

    def __init__(self, binary: str, version: tuple[int, int, int], server: Endpoint, settings: PgpoolSettings,
                 *, run_as: proc.RunAs | None, base_dir: str | None = None,
                 cpus: frozenset[int] | None = None) -> None:
        self.binary = binary
        self.version = version
        self.server = server
        self.settings = settings
        self.run_as = run_as
        self.cpus = cpus
        self._check_server()  # refused before anything is written
        base = Path(base_dir or tempfile.gettempdir())
        if run_as is not None and not reachable_by_others(base):
            raise PoolerError(f"pgpool runs as user {run_as.name}, which cannot reach {base}",
                              "set TMPDIR to a directory every user can traverse, such as /tmp")
        self.dir = safefs.private_dir("pgknee-pgpool-", base=base_dir, reachable_by=run_as)
        self.log = self.dir / "pgpool.log"
        self.run_dir = self.dir / "run"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._console: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def _check_server(self) -> None:
        params = self.server_params()
        if self.server.tls or params.get("sslmode") in ("require", "verify-ca", "verify-full"):
            raise PoolerError("the server connection uses TLS, which the managed pgpool does not carry to the "
                              "server: its steps would connect differently from the direct ones",
                              "run the pgpool variant against a server reached without TLS, or use the pgbouncer one")
        for key in ("user", "dbname"):
            if not params.get(key):
                raise PoolerError(f"the server's {key} is not known: pgpool's clients must name it",
                                  "give it in the DSN")
            _refuse_control(params[key], key)
        _conf_string(params.get("host") or "/var/run/postgresql", "host")
        _port(params.get("port") or "5432")
        passwd_field(params["user"], "user", MAX_USER_BYTES)
        if self.server.password is None:
            # pgpool would log its clients in with 'trust' and reach the server as itself: for the
            # whole step, any local user could connect through it as the target's user
            raise PoolerError("the server takes this user without a password, so pgpool would let any local user "
                              "through to it as that user",
                              "give the user a password (in PGPASSWORD or ~/.pgpass), or use the pgbouncer variant")
        passwd_field(self.server.password, "password", MAX_PASSWORD_BYTES)

    def server_params(self) -> dict[str, str]:
        """host as the target resolved it: its address when known (the server every client reached)."""
        params = dict(self.server.params)
        if params.get("hostaddr"):
            params["host"] = params["hostaddr"]
        return params

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Write the files, start pgpool, wait until a login through it answers (the console's,
        which keeps its child). A port taken between choosing and binding is retried on another."""
        self._write_private_files()
        for attempt in range(3):
            self.port = free_port()
            self.run_dir = safefs.make_dir(self.dir / f"run{attempt}", owner=self.run_as)
            safefs.replace_file(self.dir / "pgpool.conf", self.settings.conf(
                server=self.server_params(), listen_port=self.port, private_dir=self.dir, run_dir=self.run_dir,
                ).encode(), mode=0o644)
            if self._start_once():
                return
            tail = self.log_tail()
            if attempt == 2 or "Address already in use" not in tail:
                self.stop()
                raise PoolerError(f"pgpool did not start: {tail or 'no message'}",
                                  "see the message; run 'pgpool --version' to check the installation")

    def restart(self) -> bool:
        """Stopped and started again on its port, between a warm-up and the bench: its children's
        cached server connections close, so their backends report to pg_stat_database now, not up
        to 10 s idle later, inside the bench (pgbouncer's RECONNECT; pgpool has none)."""
        self.stop()
        if not self._start_once():
            raise PoolerError(f"pgpool did not start again: {self.log_tail() or 'no message'}", f"see {self.log}")
        return True

    def _write_private_files(self) -> None:
        password = self.server.password
        assert password is not None  # _check_server refused the server without one
        # TCP from this machine only, with the server's own password; no 'local' line: no Unix-socket login
        safefs.create_file(self.dir / "pool_hba.conf", b"host all all 127.0.0.1/32 scram-sha-256\n", mode=0o644)
        safefs.create_file(self.dir / "pcp.conf", b"", mode=0o644)  # no pcp user
        user = passwd_field(self.server.params["user"], "user", MAX_USER_BYTES)
        line = f"{user}:TEXT{passwd_field(password, 'password', MAX_PASSWORD_BYTES)}\n"
        safefs.create_file(self.dir / "pool_passwd", line.encode(), owner=self.run_as)
        os.close(safefs.open_log(self.log))

    def _start_once(self) -> bool:
        log = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        argv = [self.binary, "-n", "-D", "-f", str(self.dir / "pgpool.conf"), "-F", str(self.dir / "pcp.conf"),
                "-a", str(self.dir / "pool_hba.conf")]
        try:
            # SIGINT if pgknee dies: pgpool's fast shutdown, which stops its children and removes its
            # shared memory and semaphores (a SIGKILL would leave both behind)
            self._proc = proc.spawn(argv, run_as=self.run_as, die_with_parent=signal.SIGINT, group=True,
                                    stdout=subprocess.DEVNULL, stderr=log, cwd=str(self.dir), cpus=self.cpus)
        except OSError as e:
            raise PoolerError(f"cannot run {self.binary}: {e.strerror}",
                              "install the pgpool2 package, or pass --pgpool PATH") from None
        finally:
            os.close(log)
        answering = proc.wait_answering(self._proc, self._open_console, timeout=15)
        if answering is None:
            self.stop()
            raise PoolerError("pgpool did not answer within 15 s", f"see {self.log}")
        if not answering:
            self._proc = None
        return answering

    def _open_console(self) -> bool:
        try:
            conn = self.console_connect(timeout=2)
            conn.execute("SELECT 1")
        except PoolerError as e:
            if "authentication failed" in e.message or "password" in e.message:
                raise  # a refused login is said at once, not after 15 s of retries
            return False
        except psycopg.Error:
            return False
        if self.settings.console:
            self._console = conn
        else:
            conn.close()
        return True

    def console_connect(self, timeout: float = 5.0) -> psycopg.Connection[Any]:
        """A connection through pgpool for its SHOW commands: autocommit, the simple protocol."""
        try:
            conn = psycopg.connect(autocommit=True, **self.client_endpoint.kwargs(CONSOLE_APP, timeout=timeout))
        except psycopg.OperationalError as e:
            raise PoolerError(f"cannot log in through pgpool at 127.0.0.1:{self.port}: {first_line(e, last=True)}",
                              f"see {self.log}") from None
        conn.prepare_threshold = None
        return conn

    def snapshot(self) -> PgpoolSnapshot:
        """pool_snapshot on the console's connection (held since the start, in a child of its
        own); without the console, on a new connection, which waits while every child is busy."""
        with self._lock:
            if self._console is not None:
                return _checked(lambda: pool_snapshot(self._console, self.port))  # type: ignore[arg-type]
            if self.settings.console:  # stopped, or starting again: a new login would take a client's child
                raise PoolerError("pgpool's console is not open (pgpool is stopped or starting again)")
        with self.console_connect() as conn:
            return _checked(lambda: pool_snapshot(conn, self.port))

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def pids(self) -> list[int]:
        """The main process and every process below it (children, pcp, worker, health check)."""
        return descendants(self._proc.pid) if self.alive() and self._proc is not None else []

    def cpu_seconds(self) -> float | None:
        """CPU time pgpool used so far: its live processes' (utime + stime) and, in the main's cutime +
        cstime, its children's that exited (a failed login ends one; a new one is forked)."""
        if not self.alive() or self._proc is None:
            return None
        main, ticks = self._proc.pid, 0
        for p in self.pids():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{p}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if p == main else 0)
        return ticks / os.sysconf("SC_CLK_TCK")

    def log_tail(self, n: int = 3) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        kept: list[str] = []
        after = False  # a DETAIL line is kept with the message it details
        for ln in lines:
            text = " ".join(re.sub(r"^\S+ \S+: .*? pid \d+: ", "", ln).split())
            if text.startswith(("ERROR:", "FATAL:", "WARNING:")):
                kept.append(text)
            elif after and text.startswith("DETAIL:"):
                kept[-1] += " " + text
            after = text.startswith(("ERROR:", "FATAL:", "WARNING:"))
        return " | ".join(kept[-n:])

    def stop(self) -> None:
        with self._lock:
            conn, self._console = self._console, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()
        p, self._proc = self._proc, None
        if p is not None:
            ran = set(group_members(p.pid)) | {p.pid}  # its group: started with one of its own
            # SIGINT, pgpool's fast shutdown: it ends its children at once, connected clients or
            # not (SIGTERM's smart shutdown waits for them), and removes its IPC objects
            proc.stop(p, first=signal.SIGINT, grace=5.0)
            self._remove_shm(p.pid, ran)

    def _remove_shm(self, pgid: int, ran: set[int]) -> None:
        """pgpool's shared memory, when its shutdown did not remove it: its main process killed
        (by a fault, or a shutdown that outlasted its grace: a 4 KB segment once in ten loaded make
        test runs). Removed once its group is gone, as pgpool's own user."""
        proc.wait_until(lambda: not group_members(pgid), timeout=5)
        for shmid in orphaned_shm(ran):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                proc.run(["ipcrm", "-m", str(shmid)], run_as=self.run_as, timeout=10)

    def close(self) -> None:
        self.stop()
        safefs.remove_private_dir(self.dir)

    # ---- endpoints ---------------------------------------------------------------------------
    @property
    def client_endpoint(self) -> Endpoint:
        """Where pgbench connects: pgpool, as the server's own user and database."""
        p = self.server.params
        return Endpoint({"host": "127.0.0.1", "port": str(self.port), "dbname": p["dbname"], "user": p["user"],
                         "sslmode": "disable"}, self.server.password)

    def describe(self) -> dict[str, str]:
        return {**self.settings.describe(), "auth": "scram-sha-256 (pool_passwd)",
                "cpus": proc.cpus_said(self.cpus)}
