"""A server the user already runs, reached by DSN. pgknee only reads from it,
except for the workload schema the user asked it to install."""

from __future__ import annotations

import os

from pgknee.targets.base import Endpoint
from pgknee.targets.conninfo import parse_dsn, split_secret


class RemoteTarget:
    kind = "remote"
    created_by_pgknee = False

    def __init__(self, dsn: str) -> None:
        params, password = split_secret(parse_dsn(dsn))
        if password is None and os.environ.get("PGPASSWORD"):
            password = os.environ["PGPASSWORD"]
        self.endpoint = Endpoint(params, password)
        self.password_in_dsn = "password" in parse_dsn(dsn)

    def server_pid(self) -> int | None:
        return None

    def describe(self) -> dict[str, str]:
        return {"target.kind": "remote", "target.endpoint": self.endpoint.label,
                "target.local": str(self.endpoint.is_local()).lower()}

    def close(self) -> None:
        pass
