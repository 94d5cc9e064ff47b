"""The workloads' SQL as data, every statement in a file here (pgknee.base.sqlfiles): schema_* for the
marked workload schema (workloads/schema.py), ewallet_*, pgbench_* and captured_* for those
workloads, checkpoint for the two that seed. NAME.sql where every supported server takes the same
statement (`text`), NAME.MINVERSION.sql where versions differ (`load`). The pgbench scripts, and
the e-wallet's schema, seed and check (templates pgknee renders), stay beside their workload."""

from __future__ import annotations

from pgknee.base import sqlfiles


def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return sqlfiles.text(__name__, name)


def load(name: str, server_version_num: int) -> str:
    """The statement of the newest NAME.MINVERSION.sql whose MINVERSION <= server_version_num."""
    return sqlfiles.load(__name__, name, server_version_num)
