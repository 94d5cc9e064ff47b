"""The store's statements, every one a file in store/sql, and the loader that fills a file's
placeholders (identifiers from code, parameter marks from a count; never a value)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from pgknee.store import copy
from pgknee.store.coord import AgentRow
from pgknee.store.db import Store
from pgknee.store.migrate import split_sql
from pgknee.store.pg import MARK
from pgknee.store.sql import load, marks, text

NAMES = sorted(e.name.removesuffix(".sql") for e in resources.files("pgknee.store.sql").iterdir()
               if e.name.endswith(".sql"))
MANY = {"clear_step", "clear_step_samples", "remove_step"}  # the writer runs each of theirs in turn (_each)
AGENT_FIELDS = list(AgentRow.__dataclass_fields__)


def _names(listed: str) -> list[str]:
    return [n.strip() for n in listed.split(",")]


@pytest.mark.parametrize("name", NAMES)
def test_each_file_says_what_it_does_and_holds_one_statement(name: str) -> None:
    sql = text(name)
    assert sql.startswith("-- "), f"{name}.sql: a `--` line first, saying what it reads or writes"
    assert len(split_sql(sql)) == 1 or name in MANY, f"{name}.sql: one statement"
    if "{" in sql:
        with pytest.raises(ValueError, match="placeholders"):
            load(name)
    else:
        assert load(name) == sql


def test_placeholders_are_filled_with_identifiers_and_marks() -> None:
    assert load("snapshot_count", steps=3, phases=1).endswith(
        "WHERE step_id IN (?, ?, ?) AND _phase IN (?)\n")
    assert "step_id IN (NULL)" in load("snapshot_count", steps=0, phases=1)  # IN () is no SQL: NULL matches nothing
    assert "SELECT step_id, records, fpi FROM step_wal WHERE step_id IN (?, ?) ORDER BY step_id" in \
        load("records", columns=("records", "fpi"), table="step_wal", steps=2)
    assert marks(1) == "?" and marks(4) == "?, ?, ?, ?"


@pytest.mark.parametrize("parts", [
    {"columns": ["records"], "table": "step_wal; DROP TABLE runs", "steps": 1},  # not an identifier
    {"columns": ["Records"], "table": "step_wal", "steps": 1},  # not a plain lower-case one
    {"columns": ['records"'], "table": "step_wal", "steps": 1},
    {"columns": [], "table": "step_wal", "steps": 1},  # no columns
    {"columns": ["records"], "table": "step_wal", "steps": True},  # a bool is no count
    {"columns": ["records"], "table": "step_wal", "steps": -1},
    {"columns": ["records"], "table": "step_wal"},  # a placeholder left unfilled
    {"columns": ["records"], "table": "step_wal", "steps": 1, "phases": 1},  # one the file has not
])
def test_anything_but_identifiers_and_counts_is_refused(parts: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        load("records", **parts)  # type: ignore[arg-type]


def test_the_agents_statements_name_agentrows_fields() -> None:
    """coord's statements write their columns out; they cannot drift from AgentRow."""
    select = re.search(r"SELECT (.*?)\s+FROM agents", text("coord_agents"), re.S)
    assert select is not None and _names(select.group(1)) == AGENT_FIELDS
    register = text("coord_register")
    insert = re.search(r"INSERT INTO agents \((.*?)\)\s+VALUES \((.*?)\)\s+ON CONFLICT \(name\) DO UPDATE SET (.*)",
                       register, re.S)
    assert insert is not None
    assert _names(insert.group(1)) == AGENT_FIELDS
    assert _names(insert.group(2)) == [f":{f}" for f in AGENT_FIELDS]
    assert _names(insert.group(3)) == [f"{f} = excluded.{f}" for f in AGENT_FIELDS if f != "name"]


def test_the_schemas_mark_is_pg_mark() -> None:
    assert f"IS '{MARK}'" in load("pg_mark_schema", schema="pgknee")


def test_copy_reads_an_sqlite_stores_tables_as_pragma_table_info_says(tmp_path: Path) -> None:
    s = Store(tmp_path / "s.db")
    try:
        found = copy.tables(s)
        assert [t.name for t in found[:2]] == ["runs", "steps"]
        for t in found:
            info = s.db.execute(f'PRAGMA table_info("{t.name}")').fetchall()  # cid, name, type, notnull, dflt, pk
            assert t.columns == tuple(r[1] for r in info)
            pks = [r for r in info if r[5]]
            assert t.row_id == (pks[0][1] if len(pks) == 1 and pks[0][2].upper() == "INTEGER" else None)
        assert {t.name: t.row_id for t in found}["steps"] == "step_id"
    finally:
        s.close()
