"""pgbench's own workloads: TPC-B (sort of) and select-only, and article 004's read-heavy
script on the same tables, initialised by
`pgbench -i` at a chosen scale (100,000 accounts per unit)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg

from pgknee.errors import UserError
from pgknee.plan import WorkloadSpec
from pgknee.workloads.base import CheckResult, Script

TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
SCRIPTS = {"tpcb": "tpcb-like", "select-only": "select-only", "read-heavy": "read-heavy"}


class PgbenchBuiltin:
    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.scale = int(spec.scale)

    def install(self, conn: psycopg.Connection[Any], *, created_by_pgknee: bool, say: Callable[[str], None],
                run_pgbench: Callable[[list[str]], None]) -> dict[str, str]:
        row = conn.execute("SELECT to_regclass('pgbench_branches') IS NOT NULL").fetchone()
        if row and row[0]:
            have = conn.execute("SELECT count(*) FROM pgbench_branches").fetchone()
            scale_now = int(have[0]) if have else 0
            if not self.spec.reinit:
                if scale_now != self.scale:
                    raise UserError(f"the pgbench tables here are at scale {scale_now}; pgknee will not "
                                    "reinitialise them without --reinit", "add --reinit, or --scale "
                                    f"{scale_now} to use them as they are")
                say(f"reusing the pgbench tables at scale {scale_now} (--reinit reinitialises them)")
                return {"workload": self.name, "scale": str(scale_now)}
            say(f"--reinit: pgbench -i reinitialises the pgbench tables at scale {self.scale}")
        say(f"initialising pgbench tables at scale {self.scale} ({100_000 * self.scale:,} accounts)")
        # d: drop, t: create tables, G: generate server-side, v: vacuum analyze, p: primary keys
        run_pgbench(["--initialize", f"--scale={self.scale}", "--init-steps=dtGvp", "--quiet"])
        try:
            conn.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            say("note: CHECKPOINT after initialisation skipped (needs superuser or pg_checkpoint)")
        return {"workload": self.name, "scale": str(self.scale)}

    def render_scripts(self, into: Path) -> list[Script]:
        name = SCRIPTS[self.name]
        p = into / f"{name}.sql"
        p.write_text((resources.files(__package__) / "pgbench" / f"{name}.sql").read_text())
        return [Script(name, p, 1)]

    def defines(self) -> dict[str, str]:
        return {"scale": str(self.scale)}

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        rows = conn.execute("SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname = ANY(%s) "
                            "AND relkind = 'r' AND pg_table_is_visible(oid)", (list(TABLES),)).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None:
        """TPC-B keeps books too: every delta lands once in accounts, tellers, branches and history."""
        if self.name != "tpcb":
            return None
        row = conn.execute(
            "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), "
            "(SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history), "
            "(SELECT count(*) FROM pgbench_history)").fetchone()
        assert row is not None
        a, t, b, h, n = (int(x) for x in row)
        ok = a == t == b == h
        summary = (f"TPC-B books balance: accounts, tellers, branches and history all sum to {a:,} over {n:,} "
                   "transactions" if ok else
                   f"TPC-B BOOKS DO NOT BALANCE: accounts {a}, tellers {t}, branches {b}, history {h}")
        return CheckResult(ok, summary, {"accounts": a, "tellers": t, "branches": b, "history": h,
                                         "transactions": n})
