from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.abc import Params

from pgknee.base.errors import UserError
from pgknee.system import safefs
from pgknee.system.proc import RunAs


@dataclass(frozen=True)
class ScriptSource:
    """A pgbench script as a workload gives it: its text, before pgknee writes it out."""

    name: str  # e.g. 'transfer'
    filename: str  # the name pgbench shows in its messages: transfer.sql, or the user's own file's name
    text: str
    weight: int


def read_script(path: Path, shown: str, hint: str) -> str:
    """A script file's text (UTF-8); else a UserError saying why it cannot be read (shown as
    `shown`), and `hint`."""
    try:
        return path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "it is not UTF-8 text"
        raise UserError(f"script {shown} cannot be read: {why}", hint) from None


def aggregate_int(conn: psycopg.Connection[Any], query: str | sql.Composed, params: Params | None = None) -> int:
    """The integer an aggregate without GROUP BY returns in its one row (max, sum): 0 for its NULL,
    when there was no row to aggregate."""
    [(value,)] = conn.execute(query, params).fetchall()
    return int(value) if value is not None else 0


@dataclass(frozen=True)
class Script:
    """A script as pgbench reads it: a file pgknee wrote in its run directory."""

    name: str  # e.g. 'transfer'
    path: Path
    weight: int


def write_scripts(scripts: list[tuple[ScriptSource, str]], directory: Path, run_as: RunAs | None) -> list[Script]:
    """Scripts (each with the text to run) written for pgbench into a new directory of pgknee's
    under `directory`, one subdirectory each so a file keeps its own name in pgbench's messages;
    readable by `run_as`, the user pgbench runs as."""
    mode = 0o711 if run_as else 0o700
    d = safefs.make_dir(directory / f"scripts-{len(list(directory.glob('scripts-*')))}", mode=mode)
    out = []
    for i, (src, text) in enumerate(scripts):
        sd = safefs.make_dir(d / f"s{i}", mode=mode)
        safefs.create_file(sd / src.filename, text.encode(), owner=run_as)
        out.append(Script(src.name, sd / src.filename, src.weight))
    return out


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    summary: str
    details: dict[str, Any]


# pgbench -i ARGS with search_path set to the workload's schema (pgbench creates its tables unqualified)
RunPgbench = Callable[[list[str], str], None]


class Workload(Protocol):
    name: str

    def install(self, conn: psycopg.Connection[Any], *, say: Callable[[str], None],
                run_pgbench: RunPgbench) -> dict[str, str]: ...
    def sources(self) -> list[ScriptSource]: ...
    def defines(self, conn: psycopg.Connection[Any] | None = None, clients: int = 1) -> dict[str, str]: ...
    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None: ...
    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]: ...
