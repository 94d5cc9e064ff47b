"""SQL as data, one statement a file in a package's queries folder, each starting with a `--` line
saying what it does: NAME.sql for a statement every supported server takes (`text`), or one file
per server-version range, NAME.MINVERSION.sql, where versions differ (`load` picks the newest file
whose MINVERSION <= server_version_num). A statement whose identifiers come from code holds `{}` or
`{name}` placeholders for psycopg's sql.SQL(...).format(...); values are always bound parameters
(%s, %(name)s), never text. The loader of collect/queries, workloads/queries, run/queries (the idle
sessions') and store/sql (which adds its own placeholders for the store's statements)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from pgknee.base.errors import TargetError


@cache
def text(package: str, name: str) -> str:
    """The statement of PACKAGE's NAME.sql, the same on every supported server."""
    return resources.files(package).joinpath(f"{name}.sql").read_text()


@cache
def load(package: str, name: str, server_version_num: int) -> str:
    """The statement of PACKAGE's NAME.MINVERSION.sql with the highest MINVERSION that is at most
    server_version_num; a server older than every file is refused (TargetError)."""
    versions: dict[int, str] = {}
    for entry in resources.files(package).iterdir():
        parts = entry.name.split(".")
        if len(parts) == 3 and parts[0] == name and parts[2] == "sql" and parts[1].isdigit():
            versions[int(parts[1])] = entry.name
    if not versions:
        raise FileNotFoundError(f"{package} has no {name}.MINVERSION.sql")
    fit = [v for v in versions if v <= server_version_num]
    if not fit:
        raise TargetError(f"PostgreSQL {server_version_num // 10000} is too old for pgknee's {name} query",
                          f"use PostgreSQL {min(versions) // 10000} or newer")
    return resources.files(package).joinpath(versions[max(fit)]).read_text()
