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
from pathlib import Path

import psycopg

from pgknee import proc
from pgknee.errors import TargetError, UserError
from pgknee.targets.base import Endpoint

SUPERUSER = "pgknee"
BENCH_DB = "pgknee"
# Settings pgknee sets unless the user overrides them: close to a small server,
# durable (fsync, synchronous_commit on) so WAL waits look like production.
VARIANT_CONF = "pgknee-variant.conf"
DEFAULT_SETTINGS: dict[str, str] = {
    "max_connections": "100",
    "shared_buffers": "128MB",
    "compute_query_id": "on",
    "log_min_messages": "warning",
    "log_connections": "off",
}


def _version_of(bindir: Path) -> tuple[int, int] | None:
    try:
        out = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True,
                             timeout=10, check=False).stdout
    except OSError:
        return None
    for tok in out.split():
        parts = tok.split(".")
        if parts[0].isdigit():
            return int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return None


def find_bindir(explicit: str | None = None) -> Path:
    """PostgreSQL server binaries: the flag, then PATH, then pg_config --bindir,
    then the newest /usr/lib/postgresql/*/bin."""
    def ok(d: Path) -> bool:
        return (d / "initdb").is_file() and (d / "postgres").is_file() and os.access(d / "postgres", os.X_OK)

    if explicit:
        d = Path(explicit)
        if not ok(d):
            raise UserError(f"--pg-bindir {explicit} has no initdb and postgres",
                            "point it at the server's bin directory, e.g. /usr/lib/postgresql/15/bin")
        return d
    candidates: list[Path] = []
    which = shutil.which("postgres")
    if which and shutil.which("initdb"):
        candidates.append(Path(os.path.realpath(which)).parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10,
                                 check=False).stdout.strip()
            if out:
                candidates.append(Path(out))
    versioned = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                       key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0, reverse=True)
    candidates.extend(Path(p) for p in versioned)
    for d in candidates:
        if ok(d):
            return d
    raise TargetError("PostgreSQL server binaries (initdb, postgres) not found",
                      "run 'make setup' to install them, or pass --pg-bindir DIR, or use --dsn for a running server")


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


class EmbeddedCluster:
    kind = "embedded"
    created_by_pgknee = True

    def __init__(self, bindir: Path, settings: dict[str, str], *, base_dir: str | None = None) -> None:
        self.bindir = bindir
        self.settings = {**DEFAULT_SETTINGS, **settings}
        self.run_as = server_user()
        base = Path(base_dir or tempfile.gettempdir())
        if self.run_as is not None and not reachable_by_others(base):
            raise TargetError(f"the embedded server runs as user {self.run_as.name}, which cannot reach {base}",
                              "set TMPDIR to a directory every user can traverse, such as /tmp")
        self.root = Path(tempfile.mkdtemp(prefix="pgknee-cluster-", dir=base_dir))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.client_dir = Path(tempfile.mkdtemp(prefix="pgknee-client-", dir=base_dir))
        self.logfile = self.root / "server.log"
        self.port = 0
        self.password = secrets.token_urlsafe(24)
        self._proc: subprocess.Popen[bytes] | None = None
        self.version = _version_of(bindir)
        self.kept = False
        self.variant_settings: dict[str, str] = {}

    # ---- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        self._init()
        for attempt in range(3):
            self.port = free_port()
            if self._start_once():
                return
            if attempt == 2 or "could not bind" not in self._log_tail():
                break
        raise TargetError(f"the embedded PostgreSQL server did not start: {self._log_tail(1)}",
                          f"see {self.logfile}, or keep it with --keep")

    def _chown(self, path: Path) -> None:
        if self.run_as is not None:
            os.chown(path, self.run_as.uid, self.run_as.gid)

    def _init(self) -> None:
        os.chmod(self.root, 0o700)
        self._chown(self.root)
        self.sock.mkdir(mode=0o700)
        self._chown(self.sock)
        pwfile = self.root / "pwfile"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password + "\n")
        self._chown(pwfile)
        argv = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
                "-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"]
        r = proc.run(argv, run_as=self.run_as, timeout=180, cwd=str(self.root))
        pwfile.unlink()
        if r.returncode != 0:
            raise TargetError(f"initdb failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}",
                              "check the PostgreSQL installation and free disk space")
        conf = self.data / "postgresql.conf"
        with conf.open("a") as f:
            f.write("\n# --- pgknee ---\n")
            f.write("listen_addresses = '127.0.0.1'\n")
            f.write(f"unix_socket_directories = '{self.sock}'\n")
            for k, v in self.settings.items():
                f.write(f"{k} = '{v}'\n")
            f.write(f"include_if_exists = '{VARIANT_CONF}'\n")
        self._write_port()

    def _write_port(self) -> None:
        (self.data / "postgresql.auto.conf").write_text(
            "# written by pgknee at each start\n" + (f"port = {self.port}\n" if self.port else ""))
        self._chown(self.data / "postgresql.auto.conf")

    def _log_tail(self, n: int = 5) -> str:
        try:
            lines = [ln for ln in self.logfile.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-n:])

    def _start_once(self) -> bool:
        self._write_port()
        log = os.open(self.logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._chown(self.logfile)
        try:
            self._proc = proc.spawn([str(self.bindir / "postgres"), "-D", str(self.data)],
                                    run_as=self.run_as, stdout=log, stderr=log, cwd=str(self.root))
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

    def restart(self, variant_settings: dict[str, str]) -> None:
        """Restart with a variant's settings on top of the run's own (max_connections = 5000,
        ...): they live in a file of their own, included last, rewritten at each restart, so
        the next variant starts from the run's settings again."""
        self._stop_server()
        path = self.data / VARIANT_CONF
        path.write_text("# written by pgknee: the current variant's settings\n" +
                        "".join(f"{k} = '{v}'\n" for k, v in variant_settings.items()))
        self._chown(path)
        self.variant_settings = dict(variant_settings)
        if not self._start_once():
            raise TargetError(f"the embedded server did not restart with {variant_settings}: {self._log_tail(1)}",
                              "check the setting's value; the server log says why")

    def _stop_server(self) -> None:
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
        """Leave the server running past pgknee's exit; return how to use and stop it."""
        self.kept = True
        if self._proc is not None:
            proc.release(self._proc)
        as_user = f"runuser -u {self.run_as.name} -- " if self.run_as else ""
        return (f"kept the embedded server: psql \"host={self.sock} port={self.port} user={SUPERUSER} "
                f"dbname={BENCH_DB}\"  (TCP: postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{BENCH_DB}, password in "
                f"{self.client_dir / 'pgpass'}); stop it with: {as_user}{self.bindir / 'pg_ctl'} -D {self.data} "
                f"stop && rm -rf {self.root} {self.client_dir}")

    def close(self) -> None:
        if self.kept:
            return
        try:
            self._stop_server()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.rmtree(self.client_dir, ignore_errors=True)

    # ---- what the runner needs -------------------------------------------------------
    @property
    def endpoint(self) -> Endpoint:
        return Endpoint({"host": "127.0.0.1", "port": str(self.port), "user": SUPERUSER, "dbname": BENCH_DB},
                        self.password)

    @property
    def local_endpoint(self) -> Endpoint:
        """The private Unix socket (trust): for pgknee's own many sessions (idle ones), which
        would otherwise each pay a SCRAM key derivation on the client."""
        return Endpoint({"host": str(self.sock), "port": str(self.port), "user": SUPERUSER, "dbname": BENCH_DB})

    def server_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def alive(self) -> bool:
        return self.server_pid() is not None

    def describe(self) -> dict[str, str]:
        return {"target.kind": "embedded", "target.endpoint": self.endpoint.label, "target.local": "true",
                "target.bindir": str(self.bindir),
                "target.server_user": self.run_as.name if self.run_as else pwd.getpwuid(os.geteuid()).pw_name,
                **{f"embedded.setting.{k}": v for k, v in self.settings.items()}}
