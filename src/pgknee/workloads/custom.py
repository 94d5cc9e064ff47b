"""The user's own pgbench scripts against the user's own schema. pgknee runs them
and never touches the tables: no install, no reseed, no check."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from pgknee.errors import UserError
from pgknee.plan import WorkloadSpec
from pgknee.workloads.base import CheckResult, Script


class Custom:
    name = "custom"

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.sources = [(Path(p), w) for p, w in spec.scripts]
        for p, _ in self.sources:
            if not p.is_file():
                raise UserError(f"script {p} does not exist or is not a file", "check the path given to --script")

    def install(self, conn: psycopg.Connection[Any], *, created_by_pgknee: bool, say: Callable[[str], None],
                run_pgbench: Callable[[list[str]], None]) -> dict[str, str]:
        say(f"custom workload: {', '.join(f'{p.name}@{w}' for p, w in self.sources)}; pgknee leaves the "
            "schema and data as they are")
        return {"workload": "custom", "scripts": ", ".join(f"{p}@{w}" for p, w in self.sources)}

    def render_scripts(self, into: Path) -> list[Script]:
        out = []
        for i, (src, weight) in enumerate(self.sources):
            d = into / f"s{i}"
            d.mkdir(exist_ok=True)
            dst = d / src.name  # keeps the user's file name in pgbench's messages
            shutil.copyfile(src, dst)
            out.append(Script(src.stem, dst, weight))
        return out

    def defines(self) -> dict[str, str]:
        return {}

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        return {}

    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None:
        return None
