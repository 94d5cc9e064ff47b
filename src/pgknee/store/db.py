"""Open (read-only for the read commands, writable for the others), typed reads, the writer's
transaction. A file that is not a pgknee store, or was written by a newer pgknee, is refused and
left as it is (store/migrate.py); a read never writes: it opens the file read-only, and reads a
store of an older format through an upgraded copy of its own. The reads' statements are files in
store/sql, named for what they read."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pgknee.base.errors import DbError, StoreError, UserError, store_error
from pgknee.model.facts import StepFacts
from pgknee.model.kinds import Read, Rows, readable
from pgknee.model.results import (
    AgentShare,
    CapturedStatement,
    ReplayedStatement,
    RunRecord,
    ScriptRow,
    StepRecord,
)
from pgknee.store.location import Location, locate
from pgknee.store.migrate import SCHEMA_VERSION, judge, migrate, read_header
from pgknee.store.sql import load, real_or_none
from pgknee.store.sqlitefile import (
    Reader,
    check_writable,
    connect,
    count_open,
    open_here,
    private_file,
    refuse_shared_dir,
    uri,
)

__all__ = ["SCHEMA_VERSION", "Store", "busy_timeout_s"]

DEFAULT_TIMEOUT_S = 30.0
# an older store read by a read command is upgraded in a copy: in memory up to this size, above
# it in SQLite's private temporary file (in $TMPDIR, unlinked as soon as it is opened, so that
# it is gone however pgknee ends)
MEMORY_COPY_MAX = 64 << 20

def busy_timeout_s() -> float:
    """How long pgknee waits for another process's lock on the store: $PGKNEE_STORE_TIMEOUT, a
    duration with its unit like every other (60s), 30 s by default."""
    from pgknee.plan.parse import parse_seconds

    text = os.environ.get("PGKNEE_STORE_TIMEOUT", "")
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = parse_seconds(text, "PGKNEE_STORE_TIMEOUT", allow_zero=True)
    except UserError as e:
        raise UserError(e.message, "e.g. PGKNEE_STORE_TIMEOUT=60s") from None
    if value >= 86400:
        raise UserError(f"PGKNEE_STORE_TIMEOUT={text!r} is a day or more", "e.g. PGKNEE_STORE_TIMEOUT=60s")
    return value


class Store:
    @staticmethod
    def check_new(path: str | Path | Location) -> None:
        """Raise what creating a store at `path` would raise, without creating it."""
        if locate(path).postgres:
            return
        p = locate(path).path
        refuse_shared_dir(p)
        if not p.parent.exists():
            raise StoreError(f"cannot write the collector database {p}: directory {p.parent} does not exist",
                             "create it or choose another --store")
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise StoreError(f"cannot write the collector database {p}: directory {p.parent} is not writable",
                             "choose another --store")

    def __init__(self, store: str | Path | Location, *, create: bool = True) -> None:
        """`create`: a writing command's store, made (or upgraded) if need be; else a read
        command's, opened read-only and never changed. `store`: a file (SQLite) or a PostgreSQL
        database's DSN (store/location.py, store/pg.py)."""
        self.location = locate(store)
        self.label = self.location.label  # what messages say of it: never a password
        self.readonly = not create
        self.created = False  # this process made the file (a run refused before it began removes it)
        self.migrated_from: int | None = None  # the format the store (or the copy read) had
        self.timeout_s = busy_timeout_s()
        self.errors: tuple[type[Exception], ...] = (sqlite3.Error, DbError)
        if self.location.postgres:
            self.path = None
            self._open_postgres()
            return
        self.path = self.location.path
        if not create and not self.path.exists():
            raise StoreError(f"no collector database at {self.path}",
                             "run 'pgknee run' first, or point --store at the right file")
        self._copy = False  # an older store read: a migrated copy, not the file
        try:
            self.db: Any = self._open_to_read() if not create else self._open_to_write()
        except sqlite3.Error as e:
            raise store_error(e, self.path, "opening it", self.timeout_s) from None
        except OSError as e:
            raise StoreError(f"cannot open the collector database {self.path}: {e.strerror}",
                             "check the path and its permissions") from None
        self._uncount = count_open(self, self.path) if not self._copy else (lambda: None)

    def _open_postgres(self) -> None:
        from pgknee.store import pg

        self.db = pg.connect(self.location, readonly=self.readonly)
        self._finalizer: Any = weakref.finalize(self, self.db.close)  # closed with the Store, however it goes
        self.migrated_from = self.db.migrated_from
        self._copy = False
        self._uncount = lambda: None

    def _open_to_write(self) -> sqlite3.Connection:
        p = self.location.path
        if not p.parent.exists():
            raise StoreError(f"cannot write the collector database {p}: directory {p.parent} does not exist",
                             "create it or choose another --store")
        refuse_shared_dir(p)
        if p.exists() and not open_here(p):
            Reader(p, self.timeout_s).peek()  # read-only: a file that is not pgknee's is not touched
            check_writable(p)
        self.created = private_file(p)
        db = connect(uri(p, "rw"), self.timeout_s)
        try:
            judge(read_header(db), p)  # again: another pgknee may have made it meanwhile
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            self.migrated_from = migrate(db, p)
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            db.close()
            raise
        return db

    def _open_to_read(self) -> sqlite3.Connection:
        reader = Reader(self.location.path, self.timeout_s)
        db, header = reader.open()
        if header.objects == 0:
            reader.close(db)
            raise StoreError(f"no runs in {self.path}: it is an empty file", "run 'pgknee run' first")
        if header.version < SCHEMA_VERSION:
            db = self._upgraded_copy(reader, db)
        else:
            self._finalizer = weakref.finalize(self, reader.close, db)
        db.execute("PRAGMA query_only = ON")
        return db

    def _upgraded_copy(self, reader: Reader, src: sqlite3.Connection) -> sqlite3.Connection:
        """A store of an older format, read: copied (in memory, or SQLite's own temporary file
        for a big one) and the copy migrated; the file is not changed."""
        path = self.location.path
        size = sum(f.stat().st_size for f in (path, Path(f"{path}-wal")) if f.exists())
        dst = sqlite3.connect(":memory:" if size <= MEMORY_COPY_MAX else "", isolation_level=None)
        self._copy = True
        try:
            src.backup(dst)
        finally:
            reader.close(src)
        self.migrated_from = migrate(dst, path)
        return dst

    def close(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()
        else:
            self.db.close()
        self._uncount()

    # ---- the writer's transaction (store/writer.py writes run data) ----------------------------
    def transaction(self) -> _Tx:
        return _Tx(self.db)

    @property
    def postgres(self) -> bool:
        return self.location.postgres

    # ---- reads ----------------------------------------------------------------------------
    def runs(self) -> list[RunRecord]:
        rows = self.db.execute(load("runs", columns=RunRecord.__slots__)).fetchall()
        return [RunRecord(*r) for r in rows]

    def resolve_run(self, ref: str) -> RunRecord:
        """A run by id, unique id prefix, or 'last'."""
        runs = self.runs()
        if not runs:
            raise StoreError(f"no runs in {self.label}", "run 'pgknee run' first")
        if ref in ("last", "latest"):
            return runs[-1]
        exact = [r for r in runs if r.run_id == ref]
        if exact:
            return exact[0]
        matches = [r for r in runs if r.run_id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise StoreError(f"no run {ref!r} in {self.label}", "list the runs with 'pgknee runs'")
        raise StoreError(f"{ref!r} matches {len(matches)} runs", "give more of the run id")

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self.db.execute(load("steps", columns=StepRecord.__slots__), (run_id,)).fetchall()
        return [StepRecord(*r) for r in rows]

    def environment(self, run_id: str) -> dict[str, str]:
        return dict(self.db.execute(load("environment"), (run_id,)).fetchall())

    def commands(self, run_id: str) -> list[tuple[int | None, str, list[str]]]:
        rows = self.db.execute(load("commands"), (run_id,)).fetchall()
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def step_scripts(self, step_id: int) -> list[ScriptRow]:
        rows = self.db.execute(load("step_scripts", columns=ScriptRow.__slots__), (step_id,)).fetchall()
        return [ScriptRow(*r) for r in rows]

    def step_failures(self, step_id: int) -> dict[str, int]:
        return dict(self.db.execute(load("step_failures"), (step_id,)).fetchall())

    def step_facts(self, step_id: int) -> StepFacts:
        return StepFacts.of_items(dict(self.db.execute(load("step_facts"), (step_id,)).fetchall()))

    def statement_mix(self, run_id: str) -> tuple[list[CapturedStatement], list[ReplayedStatement]]:
        """A captured workload's statements and its completed steps' replay of them."""
        captured = self.db.execute(load("workload_statements"), (run_id,)).fetchall()
        steps = self.db.execute(load("replayed_statements"), (run_id,)).fetchall()
        return [CapturedStatement(*r) for r in captured], [ReplayedStatement(*r) for r in steps]

    def progress(self, step_id: int) -> list[tuple[float, float]]:
        rows = self.db.execute(load("progress"), (step_id,)).fetchall()
        return [(float(t), float(tps)) for t, tps in rows]

    def snapshot_count(self, step_ids: Sequence[int], phases: Sequence[str]) -> int:
        q = load("snapshot_count", steps=len(step_ids), phases=len(phases))
        return int(self.db.execute(q, (*step_ids, *phases)).fetchone()[0])

    def snapshot_stats(self, step_ids: Sequence[int],
                       phases: Sequence[str]) -> tuple[int, float, float, float | None]:
        """(snapshots, mean client backends, mean query ms, mean backends hidden from the sampling
        role: None before format 15)"""
        q = load("snapshot_stats", steps=len(step_ids), phases=len(phases))
        n, cb, ms, hidden = self.db.execute(q, (*step_ids, *phases)).fetchone()
        return int(n), float(cb or 0), float(ms or 0), real_or_none(hidden)

    def busy_sessions(self, step_id: int, phases: Sequence[str]) -> float | None:
        """Mean sessions active or idle in transaction per snapshot (pgknee's own left out)."""
        row = self.db.execute(load("busy_sessions", phases=len(phases)), (step_id, *phases)).fetchone()
        return real_or_none(row[0])  # an aggregate: one row, NULL without snapshots

    def wait_counts(self, step_ids: Sequence[int], phases: Sequence[str], backend: str) -> list[tuple[str, str, int]]:
        """Active sessions by wait event: (type, event, occurrences). `backend`: client|background|all."""
        name = {"client": "wait_counts_client", "background": "wait_counts_background", "all": "wait_counts_all"}
        q = load(name[backend], steps=len(step_ids), phases=len(phases))
        return [(a, b, int(c)) for a, b, c in self.db.execute(q, (*step_ids, *phases)).fetchall()]

    def records(self, step_ids: Sequence[int], kinds: Sequence[type[Any]] | None = None) -> dict[int, tuple[Any, ...]]:
        """The steps' records of every kind that says how it is read back (model.kinds.readable), or of
        `kinds`: one query a table for all the steps, each kind making its records from its rows."""
        out: dict[int, list[Any]] = {}
        for kind in kinds if kinds is not None else readable():
            tables = [self._rows_by_step(read, step_ids) for read in kind.stored_in()]
            for sid in sorted(set().union(*tables)):
                out.setdefault(sid, []).extend(kind.loaded(tuple(t.get(sid, []) for t in tables)))
        return {k: tuple(v) for k, v in out.items()}

    def _rows_by_step(self, read: Read, step_ids: Sequence[int]) -> dict[int, Rows]:
        q = load("records_bench" if read.bench_only else "records", table=read.table, columns=read.columns,
                 steps=len(step_ids))
        out: dict[int, Rows] = {}
        for row in self.db.execute(q, tuple(step_ids)).fetchall():
            out.setdefault(int(row[0]), []).append(tuple(row[1:]))
        return out

    def step_agents(self, run_id: str) -> dict[int, list[AgentShare]]:
        """Each agent's share of the run's steps run by agents (format 13 on)."""
        out: dict[int, list[AgentShare]] = {}
        for row in self.db.execute(load("step_agents", columns=AgentShare.__slots__), (run_id,)).fetchall():
            out.setdefault(int(row[0]), []).append(AgentShare(*row[1:]))
        return out



class _Tx:
    """One write transaction (BEGIN IMMEDIATE: the lock is taken, or waited for, at the start);
    rolled back on any error, including one SQLite met at COMMIT (a full disk), which may have
    rolled it back itself."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except BaseException:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error, DbError):
                self.db.execute("ROLLBACK")
