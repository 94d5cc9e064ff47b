"""The e-wallet workload of article 000: users, wallets, transactions and a
double-entry ledger; transfer 60% / balance 25% / history 15%, random users."""

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
from pgknee.workloads.base import CheckResult, RunPgbench, ScriptSource, aggregate_int

# Scale 1 is close to the article's data set (section 6, about 35 MB): 10k users
# and wallets, 100k transactions, 200k ledger entries.
USERS_PER_SCALE = 10_000
TRANSACTIONS_PER_SCALE = 100_000
OPENING_BALANCE = 1_000_000
SCRIPTS = (("transfer", 60), ("balance", 25), ("history", 15))
TABLES = wschema.TABLES["ewallet"]


def _sql(name: str) -> str:
    return (resources.files(__package__) / f"{name}.sql").read_text()


class EWallet:
    name = "ewallet"

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.schema = spec.schema
        self.users = max(2, round(USERS_PER_SCALE * spec.scale))
        self.transactions = max(1, round(TRANSACTIONS_PER_SCALE * spec.scale))

    def _render(self, text: str) -> str:
        return (text.replace("{{schema}}", self.schema).replace("{{users}}", str(self.users))
                .replace("{{transactions}}", str(self.transactions))
                .replace("{{opening_balance}}", str(OPENING_BALANCE)))

    # ---- install ---------------------------------------------------------------------------
    def install(self, conn: psycopg.Connection[Any], *, say: Callable[[str], None],
                run_pgbench: RunPgbench | None = None) -> dict[str, str]:
        found = wschema.inspect(conn, self.schema)
        wschema.refuse_foreign(found, self.schema)
        if found.exists:
            meta = found.meta
            same = meta.get("workload") == "ewallet" and meta.get("users") == str(self.users) \
                and meta.get("transactions_seeded") == str(self.transactions)
            if not self.spec.reinit:
                if meta.get("workload") != "ewallet":
                    raise UserError(f"schema {self.schema!r} holds pgknee's {meta.get('workload', 'unfinished')} "
                                    "workload, not the e-wallet", "add --reinit to replace it, or choose another "
                                    "--schema")
                if not same:
                    raise UserError(
                        f"schema {self.schema!r} holds e-wallet data at another scale "
                        f"({meta.get('users')} users); pgknee will not drop or reseed it without --reinit",
                        "add --reinit to drop and reseed it, or --scale to match it")
                say(f"reusing the e-wallet data in schema {self.schema} (seeded {meta.get('seeded_at')}, "
                    f"{meta.get('users')} users); --reinit reseeds it")
                return meta
            say(f"--reinit: dropping pgknee's schema {self.schema} and reseeding")
            wschema.drop(conn, self.schema)
        return self._seed(conn, say)

    def _seed(self, conn: psycopg.Connection[Any], say: Callable[[str], None]) -> dict[str, str]:
        t0 = time.monotonic()
        say(f"seeding e-wallet data: {self.users:,} users and wallets, {self.transactions:,} transactions, "
            f"{2 * self.transactions:,} ledger entries (schema {self.schema}, created and marked as pgknee's)")
        with conn.transaction():
            wschema.create(conn, self.schema, "ewallet")
            conn.execute(self._render(_sql("schema")).encode())
            conn.execute(self._render(_sql("seed")).encode())
            [(total,)] = conn.execute(sql.SQL(queries.text("ewallet_total_balance")).format(  # sum(): one row
                sql.Identifier(self.schema))).fetchall()
            meta = {"workload": "ewallet", "users": str(self.users),
                    "transactions_seeded": str(self.transactions), "opening_balance": str(OPENING_BALANCE),
                    "total_balance": str(total),
                    "seeded_at": time.strftime("%Y-%m-%d %H:%M:%S%z"), "scale": str(self.spec.scale)}
            wschema.write_meta(conn, self.schema, meta)
        for t in TABLES:
            conn.execute(sql.SQL(queries.text("ewallet_analyze")).format(sql.Identifier(self.schema),
                                                                         sql.Identifier(t)))
        try:
            conn.execute(queries.text("checkpoint"))
        except psycopg.errors.InsufficientPrivilege:
            say("note: CHECKPOINT after seeding skipped (needs superuser or pg_checkpoint)")
        meta["size_bytes"] = str(aggregate_int(conn, queries.text("ewallet_size"), (self.schema,)))
        say(f"seeded in {time.monotonic() - t0:.1f} s: {int(meta['size_bytes']) / 2**20:.1f} MB, "
            "ANALYZE and CHECKPOINT done")
        return meta

    # ---- scripts -------------------------------------------------------------------------------
    def sources(self) -> list[ScriptSource]:
        return [ScriptSource(name, f"{name}.sql", self._render(_sql(name)), weight) for name, weight in SCRIPTS]

    def defines(self, conn: psycopg.Connection[Any] | None = None, clients: int = 1) -> dict[str, str]:
        return {"n_users": str(self.users)}

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        rows = conn.execute(queries.text("ewallet_table_sizes"), (self.schema, list(TABLES))).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    # ---- after the run ------------------------------------------------------------------------
    def check(self, conn: psycopg.Connection[Any]) -> CheckResult:
        row = conn.execute(self._render(_sql("check")).encode()).fetchone()
        assert row is not None
        total, expected, unbalanced, orphans, off, ntx = row
        ok = total == expected and unbalanced == 0 and orphans == 0 and off == 0
        details = {"total_balance": int(total), "expected_total": int(expected),
                   "unbalanced_transactions": int(unbalanced), "transactions_without_entries": int(orphans),
                   "wallets_off_ledger": int(off), "transactions": int(ntx)}
        if ok:
            summary = (f"money conserved: total balance {int(total):,} as seeded; {int(ntx):,} transactions, "
                       "every one balanced, every wallet matches its ledger")
        else:
            summary = (f"MONEY NOT CONSERVED: total {total} vs seeded {expected}, {unbalanced} unbalanced "
                       f"transactions, {orphans} without entries, {off} wallets off their ledger")
        return CheckResult(ok, summary, details)
