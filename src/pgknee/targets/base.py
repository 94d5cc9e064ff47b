"""What every target offers the run: where clients connect, and what differs between a
server pgknee started (embedded) and one it was pointed at (remote)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgknee import APP_NAME
from pgknee.base.errors import TargetError, first_line
from pgknee.system import safefs
from pgknee.system.proc import RunAs
from pgknee.targets.conninfo import child_env, effective_params, env_neutral, localize_files, write_passfile


@dataclass(frozen=True)
class Endpoint:
    """Where to connect. `params` never holds the password; `tls` says whether the connection
    that resolved them used TLS (a pooler in front must too)."""

    params: dict[str, str]
    password: str | None = field(default=None, repr=False)
    tls: bool = False

    @classmethod
    def resolve(cls, dsn: str, *, timeout: float = 10.0) -> Endpoint:
        """The DSN as libpq resolves it (defaults, environment, service file, passfile): one
        connection, whose real parameters every later client gets."""
        kwargs: dict[str, Any] = {"application_name": f"{APP_NAME}:probe"}
        if "connect_timeout" not in dsn and not _env_has("PGCONNECT_TIMEOUT"):
            kwargs["connect_timeout"] = str(int(timeout))
        try:
            with psycopg.connect(dsn, autocommit=True, **kwargs) as conn:
                params, password = effective_params(conn)
                tls = bool(conn.pgconn.ssl_in_use)
        except psycopg.OperationalError as e:
            raise TargetError(f"cannot connect to the server of the DSN: {_first_line(e)}",
                              _connect_hint(str(e))) from None
        return cls(params, password, tls)

    @property
    def label(self) -> str:
        p = self.params
        host = p.get("host", "localhost")
        port = p.get("port", "5432")
        return f"{p.get('user', '')}@{host}:{port}/{p.get('dbname', '')}"

    def kwargs(self, application_name: str, *, timeout: float = 10.0) -> dict[str, Any]:
        """Everything a connection of pgknee's own needs, and nothing left for libpq to take
        from pgknee's environment (a PGSSLMODE or PGOPTIONS of the user's would otherwise reach
        the embedded server's sessions, and not pgbench's): the endpoint is the one truth."""
        kwargs: dict[str, Any] = {**env_neutral(self.params), **self.params}
        kwargs.setdefault("connect_timeout", str(int(timeout)))
        if not self.params.get("host", "").startswith("/"):
            # a server that went away (a failover, a cable) is noticed within tcp_user_timeout,
            # not after the kernel's two hours: every connection pgknee holds is a TCP one
            kwargs.update({k: v for k, v in KEEPALIVES.items() if k not in self.params})
        if self.password is not None:
            kwargs["password"] = self.password
        kwargs["application_name"] = application_name
        return kwargs

    def connect(self, role: str, *, autocommit: bool = True, timeout: float = 10.0) -> psycopg.Connection[Any]:
        """A pgknee connection, tagged so samplers can leave it out."""
        kwargs = self.kwargs(f"{APP_NAME}:{role}", timeout=timeout)
        try:
            return psycopg.connect(autocommit=autocommit, **kwargs)
        except psycopg.OperationalError as e:
            raise TargetError(f"cannot connect to {self.label}: {_first_line(e)}",
                              _connect_hint(str(e))) from None

    def child_env(self, parent: Path, owner: RunAs | None) -> dict[str, str]:
        """The environment of a libpq child (pgbench) running as `owner`: its passfile and TLS
        files written into a new private directory under `parent` (one of pgknee's own)."""
        d = safefs.private_dir("conn-", base=str(parent), reachable_by=owner, record=False)
        passfile = (write_passfile(d, self.password, owner=owner) if self.password is not None
                    else d / "no-passfile")  # none exists: the child reads no passfile of its own finding
        return child_env(localize_files(self.params, d, owner), passfile)

    def is_local(self) -> bool:
        host = self.params.get("host", "")
        addr = self.params.get("hostaddr", "")
        return (not host and not addr) or host.startswith("/") or host in ("localhost", "127.0.0.1", "::1") \
            or addr in ("127.0.0.1", "::1")


def _env_has(var: str) -> bool:
    return bool(os.environ.get(var))


def _first_line(e: BaseException) -> str:
    # libpq prefixes "connection failed: connection to server at ... failed:"; keep the cause
    return first_line(e, last=True)


def _connect_hint(msg: str) -> str:
    low = msg.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return "check the user and password (put the password in PGPASSWORD or ~/.pgpass, not in the DSN)"
    if "does not exist" in low:
        return "check the database and user names in the DSN"
    if "connection refused" in low or "no such file" in low or "timeout" in low or "could not translate" in low:
        return "check that the server is running and that host and port are right"
    return "check the DSN and that the server accepts connections from here"


# TCP keepalives and a bound on unacknowledged data for pgknee's own connections (libpq keywords)
KEEPALIVES = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3",
              "tcp_user_timeout": "30000"}


class Target(Protocol):
    """The server under test. Everything the run does differently for an embedded and a
    remote server goes through here; nothing outside targets/ asks which kind it has."""

    kind: str  # 'embedded' | 'remote'
    created_by_pgknee: bool  # a throwaway server of pgknee's own
    run_as: RunAs | None  # who runs what pgknee starts beside it (pgbench, pgbouncer) when pgknee is root

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def session_endpoint(self) -> Endpoint:
        """Where pgknee's own many sessions (idle ones) connect: the embedded server's private
        socket (no SCRAM per session), else the endpoint."""
        ...

    def server_pid(self) -> int | None:
        """The postmaster, when the server runs on this machine under pgknee (memory, pinning)."""
        ...

    def alive(self) -> bool: ...

    def apply_settings(self, settings: dict[str, str], say: Callable[[str], None] = ...) -> bool:
        """Run with a variant's server settings (a restart, told through `say`); True if the
        server restarted."""
        ...

    def revive(self, say: Callable[[str], None] = ...) -> bool:
        """Start the server again if it died and pgknee can (its own); True if it did."""
        ...

    def keep(self) -> str | None:
        """Leave the server running past pgknee's exit (--keep): how to use and stop it."""
        ...

    def describe(self) -> dict[str, str]: ...
    def close(self) -> None: ...
