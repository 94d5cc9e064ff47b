"""The store's format: numbered migrations under PRAGMA user_version, pgknee's SQLite
application_id, and what a file is before pgknee changes anything in it (pgknee's store, an
empty file to make one in, or another program's file, which is refused and left alone).

Each migration runs in a write transaction of its own (BEGIN IMMEDIATE: a second pgknee
migrating the same file waits for the lock, then finds the migration done), and sets the
application_id with the format, so a store is marked from its first transaction on. A store
made by a pgknee before the mark (format 1 to 8, pgknee's tables) is marked when a writing
command opens it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path

from pgknee.base.errors import StoreError
from pgknee.store.sql import load

APPLICATION_ID = 0x70676B6E  # 'pgkn': PRAGMA application_id of every pgknee store
MAGIC = b"SQLite format 3\x00"
PGKNEE_TABLES = frozenset({"runs", "steps"})


def migrations(engine: str = "sqlite") -> list[tuple[int, str]]:
    """The numbered migrations, in order; for PostgreSQL (engine 'postgresql') a migration's
    NNNN_name.pg.sql when it has one (what SQLite must say otherwise, such as a table made anew
    to change a CHECK), translated by store/dialect.py when it is applied."""
    found: dict[int, str] = {}
    for entry in sorted(resources.files("pgknee.store.migrations").iterdir(), key=lambda e: e.name):
        name = entry.name
        if not (name.endswith(".sql") and name[:4].isdigit()):
            continue
        override = name.endswith(".pg.sql")
        if override and engine == "postgresql" or not override and int(name[:4]) not in found:
            found[int(name[:4])] = entry.read_text()
    return sorted(found.items())


SCHEMA_VERSION = max(v for v, _ in migrations())


@dataclass(frozen=True)
class Header:
    """What SQLite says a file is: its marks and its tables."""

    application_id: int
    version: int
    tables: frozenset[str]
    objects: int  # tables, indexes, views, triggers


def raw_mark(path: Path) -> tuple[bool, int]:
    """(whether the file starts as an SQLite file does, its application_id) from the file's own
    first 100 bytes, before SQLite opens it; an empty file is (True, 0)."""
    with open(path, "rb") as f:
        head = f.read(100)
    if not head:
        return True, 0
    if not head.startswith(MAGIC) or len(head) < 72:
        return False, 0
    return True, int.from_bytes(head[68:72], "big")


def read_header(db: sqlite3.Connection) -> Header:
    tables = frozenset(r[0] for r in db.execute(load("sqlite_tables")))
    objects = int(db.execute(load("sqlite_objects")).fetchone()[0])
    return Header(int(db.execute("PRAGMA application_id").fetchone()[0]),
                  int(db.execute("PRAGMA user_version").fetchone()[0]), tables, objects)


def not_a_store(path: Path, why: str) -> StoreError:
    return StoreError(f"the collector database {path} is not a pgknee store: {why}; pgknee leaves it as it is",
                      "give --store a pgknee store, or the name of a new file")


def foreign_mark(path: Path, application_id: int) -> StoreError:
    return not_a_store(path, f"its SQLite application_id is {application_id:#x}, another program's")


def judge(header: Header, path: Path) -> bool:
    """Whether the file is empty (a store is to be made in it); raises for a file that is not
    pgknee's (another application_id; pgknee's mark missing and pgknee's tables too) and for a
    store written by a newer pgknee."""
    if header.objects == 0 and header.version == 0 and header.application_id in (0, APPLICATION_ID):
        return True
    if header.application_id not in (0, APPLICATION_ID):
        raise foreign_mark(path, header.application_id)
    if header.application_id == 0 and not (header.tables >= PGKNEE_TABLES and 1 <= header.version <= SCHEMA_VERSION):
        raise not_a_store(path, "an SQLite database without pgknee's tables (runs, steps)")
    if header.version > SCHEMA_VERSION:
        raise StoreError(f"{path} was written by a newer pgknee (format {header.version}, this one reads up to "
                         f"{SCHEMA_VERSION})", "upgrade pgknee to read it")
    return False


def migrate(db: sqlite3.Connection, path: Path) -> int | None:
    """Bring the store (or a copy of it) to SCHEMA_VERSION and mark it as pgknee's, in one write
    transaction (a store is upgraded whole or not at all; a new store's 19 migrations committed one
    by one took 217 ms against 80 on a disk, most of it their fsyncs); returns the format it had,
    or None when it was current. Foreign keys are off meanwhile (a table made anew must not cascade
    its old rows' deletion), checked after each migration."""
    current = int(db.execute("PRAGMA user_version").fetchone()[0])
    marked = int(db.execute("PRAGMA application_id").fetchone()[0]) == APPLICATION_ID
    if current >= SCHEMA_VERSION and marked:
        return None
    db.execute("PRAGMA foreign_keys = OFF")
    try:
        _in_write_transaction(db, partial(_migrate_all, db, current, path))
    finally:
        db.execute("PRAGMA foreign_keys = ON")
    return current if current < SCHEMA_VERSION else None


def _migrate_all(db: sqlite3.Connection, current: int, path: Path) -> None:
    for version, text in migrations():
        if version > current:
            _migrate_to(db, version, text, path)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _migrate_to(db: sqlite3.Connection, version: int, text: str, path: Path) -> None:
    if db.execute("PRAGMA user_version").fetchone()[0] >= version:
        return  # another pgknee did it while this one waited for the lock
    for stmt in split_sql(text):
        db.execute(stmt)
    if db.execute("PRAGMA foreign_key_check").fetchone() is not None:
        raise StoreError(f"migrating {path} to format {version} broke a reference",
                         "restore the file from a copy and report this")
    db.execute(f"PRAGMA user_version = {version}")
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _in_write_transaction(db: sqlite3.Connection, work: Callable[[], object]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        work()
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def split_sql(text: str) -> list[str]:
    """Split a migration into statements (no semicolons inside our DDL's literals)."""
    out, buf = [], []
    for line in text.splitlines():
        if line.strip().startswith("--"):
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            stmt = "\n".join(buf).strip()
            if stmt.strip(";").strip():
                out.append(stmt)
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf))
    return out
