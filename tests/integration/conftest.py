"""Integration fixtures: real PostgreSQL (pgknee's own embedded cluster code), real pgbench and
real pgbouncer, started by the tests themselves. Nothing is mocked.

Cost, and how the suite keeps it down:
- `server` is one cluster per test process (an xdist worker), playing the user's server: tests
  that only need *a* server run against it with --dsn and a schema of their own.
- the CLI runs in-process (`pgknee`), except where the process is the point (`pgknee_process`,
  `pgknee_popen`: signals, what other processes see, the real console script).
- `QUICK` sets the waits around a step low; a test that measures those waits leaves them alone.
- tests that only read a stored run read a copy of the golden store (`golden`), made by a real
  run (scripts/make_golden.py)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pgknee import cli
from pgknee.analyze.checks import AUTOVACUUM_COMMITS
from pgknee.targets.local import EmbeddedCluster, find_bindir, server_version

pytestmark = pytest.mark.integration

# small data so that seeding takes about a second
SCALE = "0.1"

# the waits around each step (sampled before and after pgbench, the longest wait for the server's
# statistics to settle, the wait for idle sessions' statistics): low, for tests that do not measure them
PROBED = ("--pre", "0.2s", "--post", "0.2s", "--settle", "1s", "--idle-flush", "1s")
# and every transaction logged: no 3 s probe of a variant's TPS before its first step (it chooses the
# log's sampling rate; the tests' short steps log little); PROBED keeps the probe, for the tests of it
QUICK = (*PROBED, "--log-sampling-rate", "1")

# pgknee's throwaway directories (and so its server processes) go to a directory of this test
# process's own, so that what the tests check is what they started, even with other pgknee runs on
# the machine (and other xdist workers). Other users must traverse it: as root the server runs as postgres.
RUN_TMP = tempfile.mkdtemp(prefix="pgkt-tmp-")
os.chmod(RUN_TMP, 0o755)
# what every pgknee of the tests sees: its temporary directory, no colours, and the width of a
# terminal that is not one (shutil's fallback, which an xdist worker may not get on its own)
COMMAND_ENV = {"NO_COLOR": "1", "TMPDIR": RUN_TMP, "COLUMNS": "140", "LINES": "40"}
ENV = {**os.environ, **COMMAND_ENV}

GOLDEN_SQL = Path(__file__).resolve().parent.parent / "data" / "golden.sql"


def make_golden(path: Path) -> Path:
    """The golden store at `path`, built from its SQL text (tests/data/golden.sql, written by
    scripts/make_golden.py: text in the tree, not a binary file)."""
    assert GOLDEN_SQL.is_file(), f"{GOLDEN_SQL} is missing: make it with scripts/make_golden.py"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(GOLDEN_SQL.read_text())
    return path


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


_BESIDE: list[threading.Thread] = []  # a test's threads for the next in-process command (beside_the_command)


@contextlib.contextmanager
def beside_the_command(act: Callable[[], None]) -> Iterator[None]:
    """`act` in a thread beside the in-process command the with-block runs: started once that
    command's environment is set, joined before it is put back. libpq reads the environment as it
    connects, and C's environment is not safe to change under another thread's read: a test thread
    connecting while `pgknee` set the command's environment crashed the test process (SIGSEGV in
    psycopg's connect)."""
    t = threading.Thread(target=act, daemon=True)
    _BESIDE.append(t)
    try:
        yield
    finally:
        if t in _BESIDE:  # no command ran: it never started
            _BESIDE.remove(t)
        elif t.is_alive():
            t.join(timeout=130)


def _set_environment(want: dict[str, str]) -> None:
    """os.environ made `want` by its differences only (each change is one setenv or unsetenv)."""
    for k in [k for k in os.environ if k not in want]:
        del os.environ[k]
    for k, v in want.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


@contextlib.contextmanager
def _as_a_command(args: tuple[str, ...], env: dict[str, str] | None, cwd: Path | None) -> Iterator[None]:
    """What a process of its own would have: its environment (with TMPDIR), working directory and
    argv; all put back afterwards. tempfile caches the temporary directory: that too. The threads a
    test asked for beside the command run while the environment is the command's."""
    saved_env, saved_cwd, saved_argv, saved_tempdir = dict(os.environ), os.getcwd(), sys.argv, tempfile.tempdir
    psycopg_log = logging.getLogger("psycopg")
    saved_log = (list(psycopg_log.handlers), psycopg_log.propagate)
    _set_environment({**saved_env, **COMMAND_ENV, **(env or {})})
    tempfile.tempdir = None
    sys.argv = ["pgknee", *args]
    beside = list(_BESIDE)
    _BESIDE.clear()
    try:
        for t in beside:
            t.start()
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        for t in beside:
            t.join(timeout=130)
        os.chdir(saved_cwd)
        _set_environment(saved_env)
        sys.argv, tempfile.tempdir = saved_argv, saved_tempdir
        psycopg_log.handlers[:], psycopg_log.propagate = saved_log


def _stream() -> io.TextIOWrapper:
    # binary underneath: pgknee writes a report to '-' through sys.stdout.buffer
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def _text(s: io.TextIOWrapper) -> str:
    s.flush()
    buf = s.buffer
    assert isinstance(buf, io.BytesIO)
    return buf.getvalue().decode("utf-8")


def pgknee(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
    """The command, in this process: pgknee.cli.main(argv) with the environment variables and
    working directory given (and TMPDIR set to RUN_TMP), sys.argv as the command line, standard
    output and error captured; all restored afterwards. Runs in the calling (main) thread, where
    `pgknee run` can install its signal handlers."""
    out, err = _stream(), _stream()
    # no gc.collect() afterwards (0.1-0.3 s a command in a worker holding scipy and matplotlib:
    # about 100 of make test's 575 CPU-seconds): a file or pipe pgknee leaves unclosed is an
    # unclosed-file warning, which this suite makes an error, in this test or at the next collection
    with _as_a_command(args, env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as e:  # argparse's --help and --version
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return CliResult(code, _text(out), _text(err))


def pgknee_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                   timeout: float = 300, script: bool = False) -> CliResult:
    """The command in a process of its own (python -m pgknee, or the installed console script),
    for the tests where that process is the point."""
    argv = [console_script(), *args] if script else [sys.executable, "-m", "pgknee", *args]
    p = subprocess.run(argv, capture_output=True, text=True, env={**ENV, **(env or {})}, cwd=cwd,
                       timeout=timeout, check=False)
    return CliResult(p.returncode, p.stdout, p.stderr)


def pgknee_popen(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pgknee", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**ENV, **(env or {})})


def console_script() -> str:
    """The `pgknee` the package installs beside this interpreter."""
    path = Path(sys.executable).parent / "pgknee"
    assert path.is_file() and os.access(path, os.X_OK), f"{path}: the console script is not installed"
    return str(path)


def pgknee_processes() -> list[str]:
    """postgres, pgbench or pgbouncer processes that belong to pgknee's private directories."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if f"{RUN_TMP}/pgknee-" in ln and "ps -eo" not in ln]


def shm_created_by(pids: set[int]) -> list[str]:
    """SysV shared memory segments created by one of `pids`, read from the kernel's own table
    (/proc/sysvipc/shm; columns: key shmid perms size cpid ...), not through pgknee."""
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return [ln for ln in lines if int(ln.split()[4]) in pids]


def tmp_pgknee_dirs() -> set[str]:
    return {p.name for p in Path(RUN_TMP).glob("pgknee-*")}


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    """A copy of the golden store: two runs made by scripts/make_golden.py on fresh embedded
    clusters (run A: direct, managed pgbouncer and idle sessions, clients 1,2,4, two repetitions;
    run B: one variant, a larger data size)."""
    return make_golden(tmp_path / "golden.db")


def golden_runs(store: Path) -> list[str]:
    """The run ids of the golden store, the oldest first: [A, B]."""
    return [str(r) for (r,) in sql(store, "SELECT run_id FROM runs ORDER BY created_at")]


@pytest.fixture(scope="session", autouse=True)
def _the_asked_major() -> None:
    """Under `make matrix` (PGKNEE_TEST_PG_MAJOR), the servers the tests start and pgknee's embedded
    cluster are that major's: a run that silently tested another would pass for nothing."""
    want = os.environ.get("PGKNEE_TEST_PG_MAJOR")
    if want:
        got = server_version(find_bindir())
        assert got is not None and got[0] == int(want), f"PostgreSQL {want} asked, {got} found first on PATH"


@pytest.fixture(scope="session")
def server() -> Iterator[EmbeddedCluster]:
    """A PostgreSQL server that pgknee did NOT create for the run: it plays the user's
    server for --dsn tests (an app role with a password, an app schema with data). One per test
    process; each test that runs the workload there gives it a schema of its own."""
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
APP_ENV = {"PGPASSWORD": APP_PASSWORD}


def dsn_of(c: EmbeddedCluster, user: str = "app") -> str:
    return f"postgresql://{user}@127.0.0.1:{c.port}/pgknee"


def superuser(c: EmbeddedCluster) -> psycopg.Connection[tuple[object, ...]]:
    """The cluster's own superuser, over its private socket, in autocommit."""
    return psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee", autocommit=True)


@contextlib.contextmanager
def own_cluster(name: str, settings: dict[str, str], bindir: Path | None = None,
                extensions: tuple[str, ...] = ()) -> Iterator[EmbeddedCluster]:
    """A server of a test's own (its settings, its preloaded libraries), its database made and
    `extensions` created in it; stopped and its directory removed afterwards."""
    base = tempfile.mkdtemp(prefix=f"pgkt-{name}-")
    os.chmod(base, 0o755)  # the server's user reaches its directory below
    c = EmbeddedCluster(bindir or find_bindir(), settings, base_dir=base)
    try:
        c.start()
        c.create_database()
        with superuser(c) as conn:
            for ext in extensions:
                conn.execute(psycopg.sql.SQL("CREATE EXTENSION {}").format(psycopg.sql.Identifier(ext)))
        yield c
    finally:
        c.close()
        shutil.rmtree(base, ignore_errors=True)


def sql(store: Path, q: str, *args: object) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        return db.execute(q, args).fetchall()


def workload_tps_db(store: Path, step_id: object) -> float:
    """A step's commits per second less autovacuum's (analyze.checks.AUTOVACUUM_COMMITS a table it
    vacuumed or analyzed, as pgknee's tps-vs-commits check takes them out): a test process's one
    server holds the schemas of its earlier tests, which autovacuum may visit mid-step (89 of its
    commits took a loaded CI run's 3 s step 5% over)."""
    ((tps, tps_db, txns),) = sql(store, "SELECT tps, tps_db, transactions FROM steps WHERE step_id = ?", step_id)
    pg = dict(sql(store, "SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?", step_id))
    tables = float(pg.get("autovacuum_count", 0)) + float(pg.get("autoanalyze_count", 0))  # type: ignore[arg-type]
    window = float(txns) / float(tps)  # type: ignore[arg-type]
    return float(tps_db) - AUTOVACUUM_COMMITS * tables / window  # type: ignore[arg-type]


def step_logged(seq: int = 1) -> bool:
    """pgbench of step `seq` has logged transactions: its clients are in the bench phase (through a
    pool, when there is one: pgbench writes its per-transaction log as they complete)."""
    return any(f.stat().st_size > 0 for f in Path(RUN_TMP).glob(f"pgknee-run-*/step-{seq}/log*"))


@contextlib.contextmanager
def in_bench_phase(act: Callable[[], list[int]], seq: int = 1) -> Iterator[list[int]]:
    """`act` (which kills something and says which pids) in a thread beside the run that the
    with-block runs in the main thread, once step `seq`'s pgbench has logged transactions; yields the
    pids `act` returned (none when the step's bench phase was never seen)."""
    done: list[int] = []

    def beside() -> None:
        if wait_for(lambda: step_logged(seq), 120, every=0.05):
            done.extend(act())

    with beside_the_command(beside):
        yield done


def wait_for(pred: Callable[[], object], timeout: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(every)
    return bool(pred())


from .netlab import lab  # noqa: E402, F401 - the fixture of agents in network namespaces
