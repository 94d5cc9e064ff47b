"""The workloads' and idle sessions' statements, every one a file in workloads/queries or
run/queries, and the shared loader (pgknee.base.sqlfiles) that reads them: by name, or by server
version where versions differ. No statement is left inline in the code that runs them."""

from __future__ import annotations

import ast
import re
import string
from importlib import resources
from pathlib import Path

import pytest
from psycopg import sql

import pgknee
from pgknee.base import sqlfiles
from pgknee.base.errors import TargetError
from pgknee.collect import queries as collect_queries
from pgknee.run import queries as top_queries
from pgknee.workloads import queries

SRC = Path(pgknee.__file__).parent
PACKAGES = ("pgknee.workloads.queries", "pgknee.run.queries")
FILES = sorted((p, e.name) for p in PACKAGES for e in resources.files(p).iterdir() if e.name.endswith(".sql"))
# the modules that run them: every file is used by its name, every statement they run is a file
USERS = {"pgknee.workloads.queries": sorted((SRC / "workloads").rglob("*.py")),
         "pgknee.run.queries": [SRC / "run" / "idle.py"]}


def _sql(package: str, filename: str) -> str:
    return resources.files(package).joinpath(filename).read_text()


@pytest.mark.parametrize(("package", "filename"), FILES)
def test_each_file_says_what_it_does_and_holds_one_statement(package: str, filename: str) -> None:
    text = _sql(package, filename)
    lines = text.splitlines()
    assert lines[0].startswith("-- "), f"{filename}: a `--` line first, saying what it does"
    comments = [ln for ln in lines if ln.startswith("--")]
    body = [ln for ln in lines if not ln.startswith("--")]
    assert body and ";" not in "\n".join(body), f"{filename}: one statement, no `;`"
    # psycopg reads % (parameter marks) and sql.SQL reads braces (placeholders) in comments too
    assert not any(c in ln for ln in comments for c in "%{}"), f"{filename}: no % or braces in its comments"
    assert all(len(ln) <= 120 for ln in lines)


@pytest.mark.parametrize(("package", "filename"), FILES)
def test_each_file_is_used_by_its_name(package: str, filename: str) -> None:
    name = filename.split(".")[0]
    assert any(f'"{name}"' in p.read_text() for p in USERS[package]), f"{filename} is used nowhere"


@pytest.mark.parametrize(("package", "filename"), [f for f in FILES if "{" in _sql(*f)])
def test_composed_statements_take_identifiers(package: str, filename: str) -> None:
    """A file with placeholders is composed by sql.SQL(...).format(...): identifiers (or a literal
    psycopg quotes) go where the braces are, nothing else."""
    text = _sql(package, filename)
    fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    named = {f: sql.Identifier("s", f) for f in fields if f}
    positional = [sql.Identifier(f"x{i}") for i, f in enumerate(fields) if not f]
    out = sql.SQL(text).format(*positional, **named).as_string(None)
    assert (positional or named) and "{" not in out and "}" not in out


def test_text_reads_a_file_by_its_name() -> None:
    assert queries.text("checkpoint").endswith("CHECKPOINT\n")
    assert top_queries.text("idle_sleep").endswith("SELECT pg_sleep(%s)\n")
    assert sqlfiles.text("pgknee.collect.queries", "setting") == collect_queries.text("setting")


def test_load_picks_the_newest_file_the_server_takes() -> None:
    for v in (140000, 170004, 180000, 190000):
        assert queries.load("captured_entries", v) == _sql("pgknee.workloads.queries", "captured_entries.140000.sql")
        # the same choice as collect's own loader makes over its files
        assert sqlfiles.load("pgknee.collect.queries", "wal", v) == collect_queries.load("wal", v)
    assert sqlfiles.load("pgknee.collect.queries", "wal", 170004) != sqlfiles.load("pgknee.collect.queries", "wal",
                                                                                    180000)


def test_load_refuses_a_server_older_than_every_file() -> None:
    with pytest.raises(TargetError, match="PostgreSQL 13 is too old for pgknee's captured_entries query") as e:
        queries.load("captured_entries", 130012)
    assert e.value.hint == "use PostgreSQL 14 or newer"
    with pytest.raises(FileNotFoundError):
        queries.load("no_such_query", 170000)


KEYWORD = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|DROP|ALTER|COMMENT|SET|COPY|TRUNCATE|GRANT|"
                     r"REVOKE|ANALYZE|VACUUM|CHECKPOINT|SHOW|DO)\b")


def _statement(node: ast.expr) -> bool:
    """A string literal or f-string that starts with an SQL keyword (", " joins identifiers)."""
    if isinstance(node, ast.JoinedStr):
        node = node.values[0] if node.values else node
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(KEYWORD.match(node.value))


def _inline(path: Path) -> list[str]:
    """Statements written in the code: a string that starts with an SQL keyword, as a module's
    constant or passed to a function (execute, executemany, sql.SQL, a helper that runs it); an
    exception's or a result's message (UserError(...), Parsed(...): a capitalised callee) may
    name a statement."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and _statement(node.value):
            found.append(f"{path.name}:{node.lineno}")
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee[:1].isupper() and callee != "SQL":
            continue
        if any(_statement(a) for a in [*node.args, *(k.value for k in node.keywords)]):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_statement_is_left_inline() -> None:
    assert [x for paths in USERS.values() for p in paths for x in _inline(p)] == []
