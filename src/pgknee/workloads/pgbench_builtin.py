"""pgbench's own workloads: TPC-B (sort of) and select-only, and article 004's read-heavy
script on the same tables, initialised by `pgbench -i` at a chosen scale (100,000 accounts
per unit), in pgknee's own schema (pgknee_pgbench unless --schema says otherwise): pgbench
creates its tables in the first schema of its search_path, and pgknee's scripts name the
schema in every statement, so nothing of the user's (a pgbench_accounts in public, say) is
ever read, dropped or written."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from pgknee.base.errors import UserError
from pgknee.plan import WorkloadSpec
from pgknee.workloads import queries
from pgknee.workloads import schema as wschema
from pgknee.workloads.base import CheckResult, RunPgbench, ScriptSource

SCRIPTS = {"tpcb": "tpcb-like", "select-only": "select-only", "read-heavy": "read-heavy"}
FAMILY = "pgbench"  # the three share the tables, so they share a marked schema
TABLES = wschema.TABLES[FAMILY]


class PgbenchBuiltin:
    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.schema = spec.schema
        self.scale = int(spec.scale)

    def install(self, conn: psycopg.Connection[Any], *, say: Callable[[str], None],
                run_pgbench: RunPgbench) -> dict[str, str]:
        found = wschema.inspect(conn, self.schema)
        wschema.refuse_foreign(found, self.schema)
        if found.exists:
            have = found.meta.get("scale") if found.meta.get("workload") == FAMILY else None
            if not self.spec.reinit:
                if have is None:
                    raise UserError(f"schema {self.schema!r} is pgknee's, but holds no complete pgbench tables "
                                    f"({found.meta.get('workload', 'an unfinished initialisation')})",
                                    "add --reinit to initialise them again, or choose another --schema")
                if have != str(self.scale):
                    raise UserError(f"the pgbench tables in schema {self.schema!r} are at scale {have}; pgknee "
                                    "will not reinitialise them without --reinit",
                                    f"add --reinit, or --scale {have} to use them as they are")
                say(f"reusing the pgbench tables in schema {self.schema} at scale {have} (--reinit "
                    "reinitialises them)")
                return {"workload": self.name, "scale": have, "schema": self.schema}
            say(f"--reinit: dropping pgknee's schema {self.schema} and initialising it again")
            wschema.drop(conn, self.schema)
        with conn.transaction():
            wschema.create(conn, self.schema, FAMILY)
        say(f"initialising pgbench tables at scale {self.scale} ({100_000 * self.scale:,} accounts) in schema "
            f"{self.schema}, created and marked as pgknee's")
        # t: create tables, G: generate server-side, v: vacuum analyze, p: primary keys (no d: the schema is new)
        run_pgbench(["--initialize", f"--scale={self.scale}", "--init-steps=tGvp", "--quiet"], self.schema)
        wschema.write_meta(conn, self.schema, {"workload": FAMILY, "scale": str(self.scale),
                                               "seeded_at": _now()})
        try:
            conn.execute(queries.text("checkpoint"))
        except psycopg.errors.InsufficientPrivilege:
            say("note: CHECKPOINT after initialisation skipped (needs superuser or pg_checkpoint)")
        return {"workload": self.name, "scale": str(self.scale), "schema": self.schema}

    def sources(self) -> list[ScriptSource]:
        name = SCRIPTS[self.name]
        text = (resources.files(__package__) / "pgbench" / f"{name}.sql").read_text()
        return [ScriptSource(name, f"{name}.sql", text.replace("{{schema}}", self.schema), 1)]

    def defines(self, conn: psycopg.Connection[Any] | None = None, clients: int = 1) -> dict[str, str]:
        return {"scale": str(self.scale)}

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        rows = conn.execute(queries.text("pgbench_table_sizes"), (self.schema, list(TABLES))).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None:
        """TPC-B keeps books too: every delta lands once in accounts, tellers, branches and history."""
        if self.name != "tpcb":
            return None
        q = sql.SQL(queries.text("pgbench_tpcb_books")).format(
            a=sql.Identifier(self.schema, "pgbench_accounts"), t=sql.Identifier(self.schema, "pgbench_tellers"),
            b=sql.Identifier(self.schema, "pgbench_branches"), h=sql.Identifier(self.schema, "pgbench_history"))
        row = conn.execute(q).fetchone()
        assert row is not None
        a, t, b, h, n = (int(x) for x in row)
        ok = a == t == b == h
        summary = (f"TPC-B books balance: accounts, tellers, branches and history all sum to {a:,} over {n:,} "
                   "transactions" if ok else
                   f"TPC-B BOOKS DO NOT BALANCE: accounts {a}, tellers {t}, branches {b}, history {h}")
        return CheckResult(ok, summary, {"accounts": a, "tellers": t, "branches": b, "history": h,
                                         "transactions": n})


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S%z")
