"""The SQL of the idle sessions as data, every statement in a file here (pgknee.base.sqlfiles):
idle_* (run/idle.py)."""

from __future__ import annotations

from pgknee.base import sqlfiles


def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return sqlfiles.text(__name__, name)
