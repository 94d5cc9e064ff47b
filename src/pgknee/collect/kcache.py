"""pg_stat_kcache, when the extension is installed in the benchmark's database: the CPU time
(user, system) and the bytes read and written by the queries of the database, from the kernel's
own accounting (getrusage), taken before and after a step's bench phase. A server figure that
needs no access to its /proc; skipped, silently, where the extension is absent."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from pgknee.keys import StepFact

# its view, in the schema the extension was created in, when this role may read it (to_regclass
# and has_table_privilege on an oid: no error where it is absent)
PRESENT = ("SELECT e.extversion, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
           "WHERE e.extname = 'pg_stat_kcache' AND coalesce(has_table_privilege("
           "to_regclass(quote_ident(n.nspname) || '.pg_stat_kcache'), 'SELECT'), false)")
# every column by name: versions name them differently (user_time; exec_user_time and plan_user_time)
TOTALS = "SELECT to_jsonb(k)::text FROM {}.pg_stat_kcache k WHERE datname = current_database()"
_USER = ("user_time", "exec_user_time", "plan_user_time")
_SYSTEM = ("system_time", "exec_system_time", "plan_system_time")
_READS = ("reads", "exec_reads", "plan_reads")
_WRITES = ("writes", "exec_writes", "plan_writes")


def find(conn: psycopg.Connection[Any]) -> tuple[str, str] | None:
    """(its version, its schema) when installed and readable."""
    try:
        row = conn.execute(PRESENT).fetchone()
    except psycopg.Error:
        return None
    return (str(row[0]), str(row[1])) if row else None


def totals(conn: psycopg.Connection[Any], schema: str) -> dict[str, float] | None:
    """The database's totals now (seconds, bytes); None if they cannot be read."""
    try:
        row = conn.execute(sql.SQL(TOTALS).format(sql.Identifier(schema))).fetchone()
    except psycopg.Error:
        return None
    cols = json.loads(row[0]) if row and row[0] else {}

    def total(names: tuple[str, ...]) -> float:
        return sum(float(cols.get(n) or 0.0) for n in names)

    return {StepFact.KCACHE_USER_S: total(_USER), StepFact.KCACHE_SYSTEM_S: total(_SYSTEM),
            StepFact.KCACHE_READ_BYTES: total(_READS), StepFact.KCACHE_WRITE_BYTES: total(_WRITES)}


def deltas(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float]:
    """The step's figures: what the bench phase added (none when either end is missing)."""
    if before is None or after is None:
        return {}
    return {k: max(0.0, after[k] - before.get(k, 0.0)) for k in after}
