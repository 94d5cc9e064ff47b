"""The collectors' SQL as data, every statement in a file here: NAME.sql for a statement every
supported server takes (`text`), or one file per server-version range, NAME.MINVERSION.sql, where
versions differ (`load` picks the newest file whose MINVERSION <= server_version_num)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from pgknee.errors import TargetError


@cache
def load(name: str, server_version_num: int) -> str:
    best: tuple[int, str] | None = None
    for entry in resources.files(__package__).iterdir():
        parts = entry.name.split(".")
        if len(parts) == 3 and parts[0] == name and parts[2] == "sql" and parts[1].isdigit():
            v = int(parts[1])
            if v <= server_version_num and (best is None or v > best[0]):
                best = (v, entry.read_text())
    if best is None:
        raise TargetError(f"PostgreSQL {server_version_num // 10000} is too old for pgknee's {name} query",
                          "use PostgreSQL 12 or newer")
    return best[1]


@cache
def text(name: str) -> str:
    """The statement of NAME.sql, the same on every supported server."""
    return resources.files(__package__).joinpath(f"{name}.sql").read_text()
