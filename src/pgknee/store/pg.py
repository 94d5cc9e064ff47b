"""A store in a PostgreSQL database, for a team's runs in one place and for agents on several
hosts writing one run. It holds exactly what an SQLite store holds: the same migrations
(store/dialect.py translates them) in a schema of pgknee's own, `pgknee`, marked as pgknee's (its
comment, and the `store_format` table holding the format, SQLite's application_id and
user_version). A schema of that name that pgknee did not make is refused and left alone; an
empty one (made by a DBA for pgknee, with CREATE granted) is taken.

Several pgknee processes, on any hosts, may write at once: ids come from identity columns,
every write is a transaction, and migrations run under a transaction-scoped advisory lock (a
second process waits, then finds the format current). A read command's session is read-only
and never migrates: an older store says to upgrade it.

`Connection` gives the store's code the little of sqlite3.Connection it uses (execute,
executemany, fetchone/fetchall/rowcount, in_transaction, close) with SQLite's parameter marks
translated, so that the statements in store/sql are written once (this module's own are
store/sql/pg_*.sql)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import DbError, StoreError, first_line, store_error
from pgknee.model.kinds import stored_value
from pgknee.store import dialect
from pgknee.store.location import Location
from pgknee.store.sql import load

if TYPE_CHECKING:
    import psycopg

SCHEMA = "pgknee"
MARK = "pgknee results store: made and written by pgknee only"  # also in store/sql/pg_mark_schema.sql
LOCK_KEY = 0x70676B6E  # pg_advisory_xact_lock: the store's migrations, one process at a time
CONNECT_TIMEOUT_S = 10

Params = Mapping[str, Any] | Sequence[Any]


class Cursor:
    def __init__(self, cur: psycopg.Cursor[Any]) -> None:
        self._cur = cur

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur.description is not None else []

    def __iter__(self) -> Any:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount


class Connection:
    """A PostgreSQL store's session, spoken to in the store's SQLite dialect."""

    def __init__(self, conn: psycopg.Connection[Any], location: Location) -> None:
        self.conn = conn
        self.location = location
        self.migrated_from: int | None = None

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        import psycopg

        try:
            cur = self.conn.cursor()
            cur.execute(dialect.params(sql), _plain(params))
        except psycopg.Error as e:
            raise DbError(e) from e
        return Cursor(cur)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        import psycopg

        batch = [_plain(r) for r in rows]
        if batch:
            try:
                with self.conn.cursor() as cur:
                    cur.executemany(dialect.params(sql), batch)
            except psycopg.Error as e:
                raise DbError(e) from e

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.conn.info.transaction_status not in (TransactionStatus.IDLE, TransactionStatus.UNKNOWN)

    def close(self) -> None:
        self.conn.close()


def _plain(params: Params) -> Params:
    """SQLite takes a bool as an integer: so does the store's PostgreSQL schema (its INTEGER
    columns are bigint)."""
    if isinstance(params, Mapping):
        return {k: stored_value(v) for k, v in params.items()}
    return tuple(stored_value(v) for v in params)


def connect(location: Location, *, readonly: bool) -> Connection:
    """A session to the store, its schema made (or migrated) for a writing command; refused
    when the schema is not pgknee's, or is newer than this pgknee."""
    import psycopg
    from psycopg.types.numeric import FloatLoader

    try:
        conn = psycopg.connect(location.text, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name="pgknee store")
    except psycopg.Error as e:
        raise unreachable(location, e) from None
    conn.adapters.register_loader("numeric", FloatLoader)  # avg() and sum() read as SQLite's do
    db = Connection(conn, location)
    try:
        db.migrated_from = None if readonly else _open_to_write(db)
        if readonly:
            _open_to_read(db)
    except DbError as e:
        conn.close()
        raise store_error(e, location.label, "opening it") from None
    except BaseException:
        conn.close()
        raise
    return db


def unreachable(location: Location, e: BaseException) -> StoreError:
    from pgknee.base.dsn import scrub_secrets

    # libpq may quote a part of a DSN it cannot parse: never a password
    first = scrub_secrets(first_line(e))
    return StoreError(f"cannot reach the results store {location.label}: {first}",
                      "check the store's DSN (--store, $PGKNEE_STORE_DSN), its password (~/.pgpass or the DSN in "
                      "$PGKNEE_STORE_DSN) and that the server is up")


def _state(db: Connection) -> tuple[bool, str | None, int, int]:
    """(schema exists, its comment, its tables, the format stored in it or -1)."""
    row = db.execute(load("pg_schema"), (SCHEMA,)).fetchone()
    if row is None:
        return False, None, 0, -1
    comment, objects = row[0], int(row[1])
    version = -1
    if comment == MARK:
        got = db.execute(load("pg_format", schema=SCHEMA)).fetchone()
        version = int(got[0]) if got else 0
    return True, comment, objects, version


def _refuse_foreign(db: Connection, comment: str | None, objects: int) -> None:
    if comment != MARK and objects:
        raise StoreError(f"the results store {db.location.label} has a schema '{SCHEMA}' that pgknee did not make "
                         f"({objects} objects in it); pgknee leaves it as it is",
                         "give --store another database, or rename that schema")


def _open_to_read(db: Connection) -> None:
    from pgknee.store.migrate import SCHEMA_VERSION

    found, comment, objects, version = _state(db)
    _refuse_foreign(db, comment, objects)
    if not found or version <= 0:
        raise StoreError(f"no runs in the results store {db.location.label}: it has no pgknee schema yet",
                         "run 'pgknee run --store ...' first")
    _check_newer(db, version)
    if version < SCHEMA_VERSION:
        raise StoreError(f"the results store {db.location.label} is in format {version}, older than this "
                         f"pgknee's ({SCHEMA_VERSION})",
                         f"upgrade it once: pgknee store upgrade --store '{db.location.label}' (or a writing command)")
    db.execute(load("pg_search_path", schema=SCHEMA))
    db.execute(load("pg_read_only"))


def _check_newer(db: Connection, version: int) -> None:
    from pgknee.store.migrate import SCHEMA_VERSION

    if version > SCHEMA_VERSION:
        raise StoreError(f"the results store {db.location.label} was written by a newer pgknee (format {version}, "
                         f"this one reads up to {SCHEMA_VERSION})", "upgrade pgknee to use it")


def _open_to_write(db: Connection) -> int | None:
    """Make or migrate the schema in one transaction under the advisory lock; returns the format
    it had when it was older (None: current or new)."""
    from pgknee.store.migrate import SCHEMA_VERSION, migrations

    db.execute("BEGIN")
    try:
        db.execute(load("pg_lock"), (LOCK_KEY,))
        found, comment, objects, version = _state(db)
        _refuse_foreign(db, comment, objects)
        if comment != MARK:
            if not found:
                db.execute(load("pg_create_schema", schema=SCHEMA))
            db.execute(load("pg_mark_schema", schema=SCHEMA))
            db.execute(load("pg_create_format", schema=SCHEMA))
            db.execute(load("pg_insert_format", schema=SCHEMA), (str(LOCK_KEY),))
            version = 0
        _check_newer(db, version)
        db.execute(load("pg_search_path_local", schema=SCHEMA))
        for number, text in migrations("postgresql"):
            if number > version:
                from pgknee.store.migrate import split_sql

                for stmt in split_sql(text):
                    db.execute(dialect.ddl(stmt))
        db.execute(load("pg_set_format"), (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.conn.rollback()
        raise
    db.execute(load("pg_search_path", schema=SCHEMA))
    return version if 0 < version < SCHEMA_VERSION else None
