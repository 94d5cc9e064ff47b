"""Where a store is: a file (SQLite) or a PostgreSQL database (`postgresql://...`, `postgres://...`
or a conninfo naming host=/dbname=/service=). `--store` says it; without it $PGKNEE_STORE_DSN
(which may hold a password: it is never shown), then $PGKNEE_STORE, then ./pgknee.db
(cli/common.py).
What is shown and stored of a PostgreSQL store is its `label`: the conninfo without secrets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pgknee.base.dsn import redact_dsn

_CONNINFO = re.compile(r"(?:^|\s)(?:host|hostaddr|dbname|service|port|user)\s*=")


def is_postgres(text: str) -> bool:
    t = text.strip()
    return t.startswith(("postgresql://", "postgres://")) or bool(_CONNINFO.search(t))


@dataclass(frozen=True)
class Location:
    text: str  # as given: a PostgreSQL store's may hold its password, never shown

    @property
    def postgres(self) -> bool:
        return is_postgres(self.text)

    @property
    def path(self) -> Path:
        assert not self.postgres, "a PostgreSQL store has no path"
        return Path(self.text)

    @property
    def label(self) -> str:
        """What messages, side files and the registry say of the store: its path, or its
        conninfo without the password."""
        if not self.postgres:
            return self.text
        try:
            return redact_dsn(self.text)
        except Exception:  # a conninfo libpq cannot parse: never shown (a password in it may be unquoted)
            return "(a PostgreSQL DSN that cannot be parsed)"

    def __str__(self) -> str:
        return self.label


def locate(store: str | Path | Location) -> Location:
    return store if isinstance(store, Location) else Location(str(store))


def exists(store: str | Path | Location) -> bool:
    """Whether there may be a store there already (a PostgreSQL database is asked when opened)."""
    loc = locate(store)
    return loc.postgres or loc.path.exists()
