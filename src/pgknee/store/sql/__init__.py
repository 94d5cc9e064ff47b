"""Every SQL statement of the store package, one file each, with a `--` line at its top saying
what it reads or writes: the writer's (they write run data; clear_step, clear_step_samples and
remove_step hold several, which it runs in turn), store/db.py's typed reads (named for what they
read), and those of coord (coord_*), copy (copy_*), pg (pg_*: the PostgreSQL store's schema and
format) and migrate and sqlitefile (sqlite_*). The code keeps only PRAGMAs and transaction
control (BEGIN IMMEDIATE, BEGIN, COMMIT, ROLLBACK); the migrations are in store/migrations.

A statement whose shape comes from code names its placeholders in braces, and `load` fills them:
an identifier (`{table}`) or a list of them joined by ', ' (`{columns}`) only from names that are
plain lower-case identifiers (a record's __slots__, its TABLE, the store's own schema for copy),
and parameter marks (`{steps}`, `{phases}`) only from a count, as that many `?` (NULL for none:
`IN (NULL)` matches nothing). A value never goes into the text: values are bound parameters."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from pgknee.base import sqlfiles

IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")

Part = str | Sequence[str] | int


def text(name: str) -> str:
    """NAME.sql as it is, placeholders and all."""
    return sqlfiles.text(__name__, name)


def load(name: str, /, **parts: Part) -> str:
    """NAME.sql, its placeholders filled from `parts`: a str is an identifier, a sequence of str
    a list of identifiers, an int that many parameter marks. Every placeholder must be given, and
    nothing else; a name that is not a plain identifier is refused (ValueError)."""
    return _filled(name, tuple(sorted((k, _fill(k, v)) for k, v in parts.items())))


@cache
def _filled(name: str, parts: tuple[tuple[str, str], ...]) -> str:
    sql, given = text(name), dict(parts)
    wanted = set(_PLACEHOLDER.findall(sql))
    if wanted != set(given):
        raise ValueError(f"{name}.sql has placeholders {sorted(wanted)}, given {sorted(given)}")
    return _PLACEHOLDER.sub(lambda m: given[m.group(1)], sql)


def _fill(key: str, value: Part) -> str:
    if isinstance(value, bool):
        raise ValueError(f"{key}: a count of parameter marks, not a bool")
    if isinstance(value, int):
        return marks(value)
    names = [value] if isinstance(value, str) else list(value)
    if not names:
        raise ValueError(f"{key}: no identifiers")
    for n in names:
        if not IDENTIFIER.fullmatch(n):
            raise ValueError(f"{key}: {n!r} is not a plain identifier")
    # not quoted: SQLite takes a double-quoted name that is no column for a string literal, so a
    # record that drifted from its table would read its field names as values instead of failing
    return ", ".join(names)


def marks(count: int) -> str:
    """`count` parameter marks for an IN list; NULL for none (`IN ()` is no SQL)."""
    if count < 0:
        raise ValueError(f"{count} parameter marks")
    return ", ".join("?" * count) or "NULL"


def real_or_none(value: Any) -> float | None:
    """A nullable number read back (a REAL column, an aggregate of no rows): None for NULL."""
    return None if value is None else float(value)
