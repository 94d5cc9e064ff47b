"""The schema a built-in workload lives in: created by pgknee, marked as pgknee's, and the
only thing pgknee ever changes on a user's server.

The mark is the schema's comment (MARK ...) and a pgknee_meta table inside it (what was
seeded, at what scale). A schema of the same name without the mark is refused, with or
without --reinit, before anything is changed. --reinit drops the workload's own tables and
then the schema, both RESTRICT, in one transaction with a lock_timeout: if anything outside
depends on them (a user's view, a foreign key) or the schema holds anything pgknee did not
put there, PostgreSQL refuses, the transaction rolls back and pgknee says what is in the way.
Never CASCADE; never a wait behind the user's own traffic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from pgknee import __version__
from pgknee.base.errors import TargetError, UserError, first_line
from pgknee.workloads import queries

MARK = "pgknee workload schema"
# every table a built-in workload creates, by the workload its meta records (one schema may hold one)
TABLES: dict[str, tuple[str, ...]] = {
    "ewallet": ("users", "wallets", "transactions", "ledger_entries"),
    "pgbench": ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"),
}
META_TABLE = "pgknee_meta"
LOCK_TIMEOUT = "5s"


@dataclass(frozen=True)
class Found:
    """What a schema of the workload's name holds: nothing (absent), pgknee's marked schema
    (with its meta), or something of someone else's."""

    exists: bool
    marked: bool
    meta: dict[str, str]
    tables: tuple[str, ...]  # its tables, whoever made them
    owner: str = ""
    unreadable: bool = False  # its meta table is there but this role may not read it (another role's)


def inspect(conn: psycopg.Connection[Any], schema: str) -> Found:
    row = conn.execute(queries.text("schema_namespace"), (schema,)).fetchone()
    if row is None:
        return Found(False, False, {}, ())
    oid, comment, owner = row
    tables = tuple(r[0] for r in conn.execute(queries.text("schema_tables"), (oid,)).fetchall())
    meta: dict[str, str] = {}
    readable = META_TABLE not in tables or bool(conn.execute(
        queries.text("schema_meta_readable"),
        (oid, f"{sql.Identifier(schema).as_string(conn)}.{META_TABLE}")).fetchone()[0])  # type: ignore[index]
    if META_TABLE in tables and readable:
        rows = conn.execute(sql.SQL(queries.text("schema_meta_read")).format(
            sql.Identifier(schema), sql.Identifier(META_TABLE))).fetchall()
        meta = {str(k): str(v) for k, v in rows}
    # pgknee before the comment mark: its e-wallet schema carried the meta table alone
    marked = str(comment).startswith(MARK) or ("workload" in meta and "seeded_at" in meta)
    return Found(True, marked, meta, tables, str(owner), not readable)


def refuse_foreign(found: Found, schema: str) -> None:
    """A schema of this name that pgknee did not make: one line, nothing touched."""
    if found.exists and found.unreadable:
        raise UserError(f"schema {schema!r} is a workload schema of role {found.owner!r}, which this role may not "
                        "read; pgknee does not touch it", "run as that role, or give this role a workload schema "
                        "of its own with --schema NAME")
    if found.exists and not found.marked:
        held = (f"it holds {len(found.tables)} table{'s' if len(found.tables) != 1 else ''} "
                f"({', '.join(found.tables[:4])}{', ...' if len(found.tables) > 4 else ''})"
                if found.tables else "it is empty")
        raise UserError(f"schema {schema!r} already exists and was not created by pgknee ({held}); "
                        "pgknee does not touch it, with or without --reinit",
                        "choose another schema for the workload with --schema NAME")


def create(conn: psycopg.Connection[Any], schema: str, workload: str) -> None:
    """The schema, its mark and its meta table, in the caller's transaction."""
    ident = sql.Identifier(schema)
    try:
        conn.execute(sql.SQL(queries.text("schema_create")).format(ident))
    except psycopg.errors.DuplicateSchema:
        raise UserError(f"schema {schema!r} was created by someone else just now",
                        "choose another schema with --schema NAME") from None
    except psycopg.errors.InsufficientPrivilege as e:
        raise TargetError(f"not allowed to create the workload schema: {first_line(e)}",
                          "connect as a user who may CREATE in this database") from None
    comment = (f"{MARK} ({workload}): created by pgknee {__version__} at {time.strftime('%Y-%m-%d %H:%M:%S%z')}; "
               "pgknee run --reinit drops it")
    conn.execute(sql.SQL(queries.text("schema_comment")).format(ident, sql.Literal(comment)))
    conn.execute(sql.SQL(queries.text("schema_create_meta")).format(ident, sql.Identifier(META_TABLE)))


def write_meta(conn: psycopg.Connection[Any], schema: str, meta: dict[str, str]) -> None:
    with conn.cursor() as cur:
        cur.executemany(sql.SQL(queries.text("schema_write_meta")).format(sql.Identifier(schema),
                                                                          sql.Identifier(META_TABLE)),
                        list(meta.items()))


def drop(conn: psycopg.Connection[Any], schema: str) -> None:
    """--reinit: pgknee's tables of the workload, then the schema, RESTRICT, at once or not at
    all. Refused (nothing changed) when something else depends on them or lives there, or
    when a session holds a lock on them for longer than the lock_timeout."""
    found = inspect(conn, schema)
    refuse_foreign(found, schema)
    if not found.exists:
        return
    made = TABLES.get(found.meta.get("workload", ""), tuple(t for ts in TABLES.values() for t in ts))
    ours = [t for t in (*made, META_TABLE) if t in found.tables]
    try:
        with conn.transaction():
            conn.execute(sql.SQL(queries.text("schema_lock_timeout")).format(sql.Literal(LOCK_TIMEOUT)))
            if ours:
                conn.execute(sql.SQL(queries.text("schema_drop_tables")).format(
                    sql.SQL(", ").join(sql.Identifier(schema, t) for t in ours)))
            conn.execute(sql.SQL(queries.text("schema_drop")).format(sql.Identifier(schema)))
    except psycopg.errors.LockNotAvailable:
        raise TargetError(f"--reinit: another session holds a lock on the tables of schema {schema!r} (waited "
                          f"{LOCK_TIMEOUT}); pgknee changed nothing",
                          "run again when that session is done, or use another --schema") from None
    except psycopg.errors.DependentObjectsStillExist as e:
        detail = (e.diag.message_detail or str(e)).strip().replace("\n", "; ")
        raise UserError(f"--reinit: schema {schema!r} is pgknee's, but objects pgknee did not create depend on "
                        f"it or live in it ({detail[:300]}); pgknee changed nothing",
                        "drop or move those objects yourself, or choose another --schema") from None
    except psycopg.errors.InsufficientPrivilege as e:
        raise TargetError(f"--reinit: not allowed to drop schema {schema!r}: {first_line(e)}",
                          "connect as the user who created it, or choose another --schema") from None


def marked_schemas(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int]]:
    """pgknee's workload schemas in this database (marked by comment, or by their meta table as
    pgknee once marked them): (name, owner, bytes of their tables), by name."""
    rows = conn.execute(queries.text("schema_marked"), (MARK + "%", META_TABLE)).fetchall()
    return [(str(n), str(o), int(b)) for n, o, b in rows if inspect(conn, str(n)).marked]


def cleanup(conn: psycopg.Connection[Any], schema: str | None = None, *, dry_run: bool = False,
            say: Callable[[str], None] = lambda _: None) -> list[str]:
    """pgknee cleanup --dsn: drop pgknee's workload schemas (or the one named), each as --reinit
    drops it (its own tables then the schema, RESTRICT, at once or not at all); a schema not
    marked as pgknee's is refused before anything is dropped. A line per schema, said as it is
    dropped (a refusal further on leaves those said dropped, and only those)."""
    if schema is not None:
        found = inspect(conn, schema)
        if not found.exists:
            raise UserError(f"this database has no schema {schema!r}", "pgknee cleanup --dsn ... --dry-run lists "
                            "pgknee's own schemas")
        refuse_foreign(found, schema)
        targets = [(schema, found.owner, -1)]
    else:
        targets = marked_schemas(conn)
    out = []
    for name, owner, size in targets:
        what = f"schema {name!r} (owner {owner}" + (f", {size / 2**20:,.1f} MB" if size >= 0 else "") + ")"
        if not dry_run:
            drop(conn, name)
        out.append(("would drop " if dry_run else "dropped ") + what)
        say(out[-1])
    return out
