"""A server the user already runs, reached by DSN. pgknee only reads from it, except for
the workload schema of its own that it creates and marks (workloads/schema.py)."""

from __future__ import annotations

from collections.abc import Callable

from pgknee.base.dsn import parse_dsn
from pgknee.base.errors import TargetError
from pgknee.model.keys import Env
from pgknee.system.proc import RunAs
from pgknee.targets.base import Endpoint
from pgknee.targets.local import server_user


class RemoteTarget:
    kind = "remote"
    created_by_pgknee = False

    def __init__(self, dsn: str) -> None:
        self.password_in_dsn = "password" in parse_dsn(dsn)
        self.endpoint = Endpoint.resolve(dsn)
        self.session_endpoint = self.endpoint
        # pgbench (and a managed pgbouncer) never run as root: as the server's usual user
        self.run_as: RunAs | None = server_user()

    def server_pid(self) -> int | None:
        return None

    def alive(self) -> bool:
        return True

    def apply_settings(self, settings: dict[str, str], say: Callable[[str], None] = lambda _: None) -> bool:
        if settings:
            raise TargetError("pgknee does not change a remote server's settings",
                              "run once per setting against your server and compare: pgknee compare RUN_A RUN_B")
        return False

    def revive(self, say: Callable[[str], None] = lambda _: None) -> bool:
        return False  # the user's server comes back by itself (or not): pgknee waits for it

    def keep(self) -> str | None:
        return None

    def describe(self) -> dict[str, str]:
        return {Env.TARGET_KIND: "remote", Env.TARGET_ENDPOINT: self.endpoint.label,
                Env.TARGET_LOCAL: str(self.endpoint.is_local()).lower(), Env.TARGET_TLS: str(self.endpoint.tls).lower()}

    def close(self) -> None:
        pass
