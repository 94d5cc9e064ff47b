"""Fault tests: real pgknee processes against real files, real locks, a real small file system
and the session's "user's server" (tests/integration/conftest.py's fixtures and helpers, imported
from there). Each test checks what was kept, the one line and exit code, and that nothing is left
behind: no pgknee process (by pid), no registry entry, no directory (by path)."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from integration.conftest import (  # noqa: F401 - fixtures and helpers shared with the integration tests
    APP_PASSWORD,
    ENV,
    RUN_TMP,
    SCALE,
    CliResult,
    dsn_of,
    lab,
    pgknee_processes,
    server,
    tmp_pgknee_dirs,
    wait_for,
)


def sql(store: Path, q: str, *args: object) -> list[tuple[object, ...]]:
    """A query on a store, on a connection closed after it (a file system must unmount)."""
    with contextlib.closing(sqlite3.connect(store)) as db:
        return db.execute(q, args).fetchall()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(RUN_TMP, ignore_errors=True)  # when the integration tests' conftest is not loaded


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """The registry's directory for the pgknee processes a test starts (PGKNEE_STATE_DIR)."""
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


def env_of(state: Path, **more: str) -> dict[str, str]:
    return {**ENV, "PGKNEE_STATE_DIR": str(state), "PGPASSWORD": APP_PASSWORD, **more}


def start(*args: str, state: Path, cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pgknee", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=cwd, env=env_of(state, **env))


def run(*args: str, state: Path, cwd: Path, timeout: float = 300, **env: str) -> CliResult:
    p = start(*args, state=state, cwd=cwd, **env)
    out, err = p.communicate(timeout=timeout)
    return CliResult(p.returncode, out, err)


def one_error_line(err: str) -> str:
    """The run's error: the one 'pgknee: error:' line, no traceback."""
    assert "Traceback" not in err and "Exception ignored" not in err, err
    errors = [ln for ln in err.splitlines() if ln.startswith("pgknee:")]
    assert len(errors) == 1, err
    return errors[0]


def assert_nothing_left(state: Path, pids: list[int], dirs_before: set[str]) -> None:
    """No pgknee process of the test's (by pid) or started by one, no registry entry, no directory."""
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert pgknee_processes() == []
    assert sorted(p.name for p in state.glob("pgknee-*.json")) == []
    assert tmp_pgknee_dirs() - dirs_before == set()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """mount(size_kb): a tmpfs of that size mounted for the test (root only), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted: list[Path] = []

    def mount(size_kb: int) -> Path:
        d = tmp_path / f"fs{len(mounted)}"
        d.mkdir(mode=0o700)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(d)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    gc.collect()  # connections a failed assertion left open
    for d in reversed(mounted):
        if subprocess.run(["umount", str(d)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(d)], capture_output=True, check=False)
        assert not os.path.ismount(d), f"{d} is still mounted"


def remount_read_only(d: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True, capture_output=True)


def fill(d: Path) -> Path:
    """Fill the file system of `d` to the last byte: a file written until the device is full."""
    filler = d / "filler"
    chunk = b"\0" * 4096
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            try:
                if os.write(fd, chunk) < len(chunk):
                    continue
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return filler
    finally:
        os.close(fd)
