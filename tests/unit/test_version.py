"""pgknee --version names the commit of a checkout, read from the repository's files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pgknee import __version__
from pgknee.cli.version import describe

SHA = "0123456789abcdef0123456789abcdef01234567"


def _checkout(root: Path, head: str, loose: str | None = None, packed: str | None = None) -> Path:
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(head + "\n")
    if loose is not None:
        (root / ".git" / "refs" / "heads" / "main").write_text(loose + "\n")
    if packed is not None:
        (root / ".git" / "packed-refs").write_text(f"# pack-refs with: peeled\n{packed} refs/heads/main\n")
    pkg = root / "src" / "pgknee"
    pkg.mkdir(parents=True)
    return pkg


def test_a_checkout_names_its_commit(tmp_path: Path) -> None:
    assert describe(_checkout(tmp_path / "a", "ref: refs/heads/main", loose=SHA)) == \
        f"pgknee {__version__} (checkout 0123456 on main)"
    assert describe(_checkout(tmp_path / "b", "ref: refs/heads/main", packed=SHA)) == \
        f"pgknee {__version__} (checkout 0123456 on main)"
    assert describe(_checkout(tmp_path / "c", SHA)) == f"pgknee {__version__} (checkout 0123456)"  # detached


def test_an_installed_package_names_its_version_only(tmp_path: Path) -> None:
    pkg = tmp_path / "site-packages" / "pgknee"
    pkg.mkdir(parents=True)
    assert describe(pkg) == f"pgknee {__version__}"
    assert describe(_checkout(tmp_path / "d", "ref: refs/heads/gone")) == f"pgknee {__version__}"


def test_the_command_prints_it() -> None:
    out = subprocess.run([sys.executable, "-m", "pgknee", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(f"pgknee {__version__}") and out.returncode == 0
