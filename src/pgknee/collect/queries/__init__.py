"""The collectors' SQL as data, every statement in a file here (pgknee.base.sqlfiles): NAME.sql for a
statement every supported server takes (`text`), or one file per server-version range,
NAME.MINVERSION.sql, where versions differ (`load` picks the newest file whose MINVERSION <=
server_version_num)."""

from __future__ import annotations

from pgknee.base import sqlfiles


def load(name: str, server_version_num: int) -> str:
    return sqlfiles.load(__name__, name, server_version_num)


def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return sqlfiles.text(__name__, name)
