"""What every target offers the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgknee import APP_NAME
from pgknee.errors import TargetError
from pgknee.targets.conninfo import child_env


@dataclass(frozen=True)
class Endpoint:
    """Where to connect. `params` never holds the password."""

    params: dict[str, str]
    password: str | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        p = self.params
        host = p.get("host", "localhost")
        port = p.get("port", "5432")
        return f"{p.get('user', '')}@{host}:{port}/{p.get('dbname', '')}"

    def connect(self, role: str, *, autocommit: bool = True, timeout: float = 10.0) -> psycopg.Connection[Any]:
        """A pgknee connection, tagged so samplers can leave it out."""
        kwargs: dict[str, Any] = dict(self.params)
        kwargs.setdefault("connect_timeout", str(int(timeout)))
        if self.password is not None:
            kwargs["password"] = self.password
        kwargs["application_name"] = f"{APP_NAME}:{role}"
        try:
            return psycopg.connect(autocommit=autocommit, **kwargs)
        except psycopg.OperationalError as e:
            raise TargetError(f"cannot connect to {self.label}: {_first_line(e)}",
                              _connect_hint(str(e))) from None

    def child_env(self, private_dir: Path) -> dict[str, str]:
        return child_env(self.params, self.password, private_dir)

    def is_local(self) -> bool:
        host = self.params.get("host", "")
        addr = self.params.get("hostaddr", "")
        return (not host and not addr) or host.startswith("/") or host in ("localhost", "127.0.0.1", "::1") \
            or addr in ("127.0.0.1", "::1")


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    # libpq prefixes "connection failed: connection to server at ... failed:"; keep the cause
    return lines[-1] if lines else type(e).__name__


def _connect_hint(msg: str) -> str:
    low = msg.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return "check the user and password (put the password in PGPASSWORD or ~/.pgpass, not in the DSN)"
    if "does not exist" in low:
        return "check the database and user names in the DSN"
    if "connection refused" in low or "no such file" in low or "timeout" in low or "could not translate" in low:
        return "check that the server is running and that host and port are right"
    return "check the DSN and that the server accepts connections from here"


class Target(Protocol):
    kind: str  # 'embedded' | 'remote'
    created_by_pgknee: bool  # may pgknee run DDL freely there?

    @property
    def endpoint(self) -> Endpoint: ...

    def server_pid(self) -> int | None: ...
    def describe(self) -> dict[str, str]: ...
    def close(self) -> None: ...
