"""The collectors' SQL as data, every statement in a file here (pgknee.base.sqlfiles): NAME.sql for a
statement every supported server takes (`text`), or one file per server-version range,
NAME.MINVERSION.sql, where versions differ (`load` picks the newest file whose MINVERSION <=
server_version_num)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pgknee.base import sqlfiles

if TYPE_CHECKING:
    import psycopg


def load(name: str, server_version_num: int) -> str:
    return sqlfiles.load(__name__, name, server_version_num)


def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return sqlfiles.text(__name__, name)


def one_row(conn: psycopg.Connection[Any], name: str, params: Sequence[Any] | None = None) -> Any:
    """The row of NAME.sql, a statement that always returns exactly one (SHOW, an aggregate without
    GROUP BY, a SELECT without FROM): never None."""
    row = conn.execute(text(name), params).fetchone()
    assert row is not None, f"{name}.sql returned no row"
    return row
