"""The user's own pgbench scripts against the user's own schema. pgknee runs them as the
user wrote them and never touches the tables: no install, no reseed, no check, no DDL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from pgknee.plan import WorkloadSpec
from pgknee.workloads.base import CheckResult, RunPgbench, ScriptSource, read_script


class Custom:
    name = "custom"

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self._sources: list[ScriptSource] = []
        for p, w in spec.scripts:
            path = Path(p)
            text = read_script(path, p, "check the path given to --script")
            self._sources.append(ScriptSource(path.stem, path.name, text, w))

    def install(self, conn: psycopg.Connection[Any], *, say: Callable[[str], None],
                run_pgbench: RunPgbench) -> dict[str, str]:
        say(f"custom workload: {', '.join(f'{s.filename}@{s.weight}' for s in self._sources)}; pgknee leaves "
            "the schema and data as they are")
        return {"workload": "custom", "scripts": ", ".join(f"{p}@{w}" for p, w in self.spec.scripts)}

    def sources(self) -> list[ScriptSource]:
        return list(self._sources)

    def defines(self, conn: psycopg.Connection[Any] | None = None, clients: int = 1) -> dict[str, str]:
        return {}

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        return {}

    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None:
        return None
