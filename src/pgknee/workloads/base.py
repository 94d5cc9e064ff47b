from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg


@dataclass(frozen=True)
class Script:
    name: str  # e.g. 'transfer'
    path: Path  # the rendered file pgbench reads
    weight: int


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    summary: str
    details: dict[str, Any]


class Workload(Protocol):
    name: str

    def install(self, conn: psycopg.Connection[Any], *, created_by_pgknee: bool, say: Callable[[str], None],
                run_pgbench: Callable[[list[str]], None]) -> dict[str, str]: ...
    def render_scripts(self, into: Path) -> list[Script]: ...
    def defines(self) -> dict[str, str]: ...
    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None: ...
    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]: ...
