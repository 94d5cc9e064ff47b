"""The SQL of pgknee's top-level modules as data, every statement in a file here (pgknee.sqlfiles):
idle_* for the idle sessions (idle.py)."""

from __future__ import annotations

from pgknee import sqlfiles


def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return sqlfiles.text(__name__, name)
