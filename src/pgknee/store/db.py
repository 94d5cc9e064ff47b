"""Connect, migrate (PRAGMA user_version + numbered migrations), typed reads and writes.
A file written by a newer pgknee is refused, never downgraded."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pgknee import safefs
from pgknee.errors import StoreError, UserError
from pgknee.plan import plan_from_stored
from pgknee.types import OsSample, PoolerRecord, PoolerSample, RunData, RunRecord, ScriptRow, StepRecord


def _migrations() -> list[tuple[int, str]]:
    out = []
    for entry in resources.files("pgknee.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), entry.read_text()))
    return sorted(out)


SCHEMA_VERSION = max(v for v, _ in _migrations())


class Store:
    @staticmethod
    def check_new(path: str | Path) -> None:
        """Raise what creating a store at `path` would raise, without creating it."""
        p = Path(path)
        _refuse_shared_dir(p)
        if not p.parent.exists():
            raise StoreError(f"cannot write the collector database {p}: directory {p.parent} does not exist",
                             "create it or choose another --store")
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise StoreError(f"cannot write the collector database {p}: directory {p.parent} is not writable",
                             "choose another --store")

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"no collector database at {self.path}",
                             "run 'pgknee run' first, or point --store at the right file")
        try:
            if create and not self.path.parent.exists():
                raise StoreError(f"cannot write the collector database {self.path}: "
                                 f"directory {self.path.parent} does not exist", "create it or choose another --store")
            _refuse_shared_dir(self.path)
            _private_file(self.path)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA foreign_keys = ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path} was written by a newer pgknee (format {version}, this one reads "
                                 f"up to {SCHEMA_VERSION})", "upgrade pgknee to read it")
            if version < SCHEMA_VERSION:
                self._migrate(version)
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot use the collector database {self.path}: {e}",
                             "check that it is a pgknee store and writable, or choose another --store") from None

    def _migrate(self, current: int) -> None:
        """Each migration in a write transaction of its own (a second pgknee migrating the same file
        waits, then finds it done); foreign keys off meanwhile (a table made anew must not cascade
        its old rows' deletion), checked before each commit."""
        self.db.execute("PRAGMA foreign_keys = OFF")
        try:
            for version, text in _migrations():
                if version > current:
                    self._migrate_to(version, text)
        finally:
            self.db.execute("PRAGMA foreign_keys = ON")

    def _migrate_to(self, version: int, text: str) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if self.db.execute("PRAGMA user_version").fetchone()[0] < version:
                for stmt in _split_sql(text):
                    self.db.execute(stmt)
                if self.db.execute("PRAGMA foreign_key_check").fetchone() is not None:
                    raise StoreError(f"migrating {self.path} to format {version} broke a reference",
                                     "restore the file from a copy and report this")
                self.db.execute(f"PRAGMA user_version = {version}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    # ---- the writer's transaction (store/writer.py writes run data) ----------------------------
    def transaction(self) -> _Tx:
        return _Tx(self.db)

    # ---- reads ----------------------------------------------------------------------------
    def runs(self) -> list[RunRecord]:
        rows = self.db.execute(f"SELECT {', '.join(RunRecord.__slots__)} FROM runs ORDER BY created_at").fetchall()
        return [RunRecord(*r) for r in rows]

    def resolve_run(self, ref: str) -> RunRecord:
        """A run by id, unique id prefix, or 'last'."""
        runs = self.runs()
        if not runs:
            raise StoreError(f"no runs in {self.path}", "run 'pgknee run' first")
        if ref in ("last", "latest"):
            return runs[-1]
        exact = [r for r in runs if r.run_id == ref]
        if exact:
            return exact[0]
        matches = [r for r in runs if r.run_id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise StoreError(f"no run {ref!r} in {self.path}", "list the runs with 'pgknee runs'")
        raise StoreError(f"{ref!r} matches {len(matches)} runs", "give more of the run id")

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self.db.execute(f"SELECT {', '.join(StepRecord.__slots__)} FROM steps WHERE run_id = ? ORDER BY seq",
                               (run_id,)).fetchall()
        return [StepRecord(*r) for r in rows]

    def environment(self, run_id: str) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM run_environment WHERE run_id = ? ORDER BY key",
                                    (run_id,)).fetchall())

    def commands(self, run_id: str) -> list[tuple[int | None, str, list[str]]]:
        rows = self.db.execute("SELECT step_id, purpose, argv_json FROM run_commands WHERE run_id = ? ORDER BY id",
                               (run_id,)).fetchall()
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def step_scripts(self, step_id: int) -> list[ScriptRow]:
        rows = self.db.execute(f"SELECT {', '.join(ScriptRow.__slots__)} FROM step_scripts WHERE step_id = ? "
                               "ORDER BY script_no", (step_id,)).fetchall()
        return [ScriptRow(*r) for r in rows]

    def step_failures(self, step_id: int) -> dict[str, int]:
        return dict(self.db.execute("SELECT kind, count FROM step_failures WHERE step_id = ?", (step_id,)).fetchall())

    def pooler_record(self, step: StepRecord) -> PoolerRecord | None:
        if step.pooler_kind is None:
            return None
        cols = ", ".join(PoolerSample.__slots__)
        rows = self.db.execute(f"SELECT {cols} FROM pooler_samples WHERE step_id = ? AND _phase = 'bench' "
                               "ORDER BY epoch", (step.step_id,)).fetchall()
        facts = dict(self.db.execute("SELECT name, value FROM step_pooler WHERE step_id = ?",
                                     (step.step_id,)).fetchall())
        return PoolerRecord([PoolerSample(*r) for r in rows], facts)

    def step_facts(self, step_id: int) -> dict[str, float]:
        return dict(self.db.execute("SELECT name, value FROM step_facts WHERE step_id = ?", (step_id,)).fetchall())

    def pg_stat_database(self, step_id: int) -> dict[str, float]:
        return dict(self.db.execute("SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?",
                                    (step_id,)).fetchall())

    def progress(self, step_id: int) -> list[tuple[float, float]]:
        return self.db.execute("SELECT t_s, tps FROM step_progress WHERE step_id = ? ORDER BY t_s",
                               (step_id,)).fetchall()

    def snapshot_count(self, step_ids: Sequence[int], phases: Sequence[str]) -> int:
        q = (f"SELECT count(*) FROM snapshots WHERE step_id IN ({_marks(step_ids)}) "
             f"AND _phase IN ({_marks(phases)})")
        return int(self.db.execute(q, (*step_ids, *phases)).fetchone()[0])

    def snapshot_stats(self, step_ids: Sequence[int], phases: Sequence[str]) -> tuple[int, float, float]:
        """(snapshots, mean client backends, mean query ms)"""
        q = (f"SELECT count(*), avg(client_backends), avg(query_ms) FROM snapshots WHERE step_id IN "
             f"({_marks(step_ids)}) AND _phase IN ({_marks(phases)})")
        n, cb, ms = self.db.execute(q, (*step_ids, *phases)).fetchone()
        return int(n), float(cb or 0), float(ms or 0)

    def busy_sessions(self, step_id: int, phases: Sequence[str]) -> float | None:
        """Mean sessions active or idle in transaction per snapshot (pgknee's own left out)."""
        q = (f"SELECT avg(active + idle_in_xact) FROM snapshots WHERE step_id = ? "
             f"AND _phase IN ({_marks(phases)})")
        row = self.db.execute(q, (step_id, *phases)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def wait_counts(self, step_ids: Sequence[int], phases: Sequence[str], backend: str) -> list[tuple[str, str, int]]:
        """Active sessions by wait event: (type, event, occurrences). `backend`: client|background|all."""
        # client backends are active by their state; background processes have no state, and the
        # sampler stored only those not idling in an Activity wait, so every stored one is working
        active = "state IN ('active', 'fastpath function call')"
        cond = {"client": f"AND backend_type = 'client backend' AND {active}",
                "background": f"AND backend_type IS DISTINCT FROM 'client backend' AND ({active} OR state IS NULL)",
                "all": f"AND ({active} OR (state IS NULL AND backend_type IS DISTINCT FROM 'client backend'))"}[backend]
        q = (f"SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*) "
             f"FROM snap_pg_stat_activity WHERE _step_id IN ({_marks(step_ids)}) AND _phase IN ({_marks(phases)}) "
             f"{cond} GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2")
        return [(a, b, int(c)) for a, b, c in self.db.execute(q, (*step_ids, *phases)).fetchall()]

    def os_samples(self, step_id: int, phases: Sequence[str] = ("bench",)) -> list[OsSample]:
        cols = ", ".join(f for f in OsSample.__slots__ if f != "phase")
        q = (f"SELECT {cols.replace('epoch', 'epoch, _phase')} FROM os_samples WHERE step_id = ? "
             f"AND _phase IN ({_marks(phases)}) ORDER BY epoch")
        return [OsSample(*r) for r in self.db.execute(q, (step_id, *phases)).fetchall()]


def _check_plan(run: RunRecord) -> None:
    try:
        plan = json.loads(run.plan_json)
        if not isinstance(plan, dict):
            raise UserError("the stored plan is not one pgknee wrote")
        clients = plan.get("clients") or [1]
        plan_from_stored(plan, tuple(clients) if isinstance(clients, list) else (1,))
    except (UserError, ValueError) as e:
        raise StoreError(f"run {run.run_id} cannot be read: {getattr(e, 'message', 'its plan is not JSON')}",
                         "this store was changed by something other than pgknee") from None


def _refuse_shared_dir(path: Path) -> None:
    """As root, never a store in a directory another user can write: they could put a link
    where the store, its -wal or its -shm file is about to be opened."""
    if os.geteuid() == 0 and safefs.writable_by_others(path.parent if str(path.parent) else Path(".")):
        raise StoreError(f"as root, pgknee keeps its store out of {path.parent or '.'}, which other users can "
                         "write (a link planted there would redirect root's writes)",
                         "give --store a path in a directory only root can write")


def _private_file(path: Path) -> None:
    """The store is the user's alone (0600; SQLite gives its -wal and -shm the same mode): it
    holds query texts and the server's settings. A new one is created so, never through a link;
    an existing one of the user's is made so."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(fd)
        return
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(f"cannot write the collector database {path}: {e.strerror}",
                         "choose another --store") from None
    st = os.stat(path)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            with contextlib.suppress(OSError):
                if p.exists() and not p.is_symlink():
                    os.chmod(p, 0o600)


def _marks(seq: Sequence[Any]) -> str:
    return ", ".join("?" for _ in seq) or "NULL"


def _split_sql(text: str) -> list[str]:
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


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def load_run(store: Store, ref: str) -> RunData:
    """Everything analysis needs about one run, read once. Its stored plan passes the checks a
    plan from flags passes (a store is a file: it may have been changed since pgknee wrote it)."""
    run = store.resolve_run(ref)
    _check_plan(run)
    steps = store.steps(run.run_id)
    ids = [s.step_id for s in steps]
    bench = ("bench",)
    return RunData(
        run=run, env=store.environment(run.run_id), commands=store.commands(run.run_id), steps=steps,
        scripts={i: store.step_scripts(i) for i in ids}, failures={i: store.step_failures(i) for i in ids},
        pgdb={i: store.pg_stat_database(i) for i in ids}, os={i: store.os_samples(i) for i in ids},
        waits={i: store.wait_counts([i], bench, "client") for i in ids},
        waits_bg={i: store.wait_counts([i], bench, "background") for i in ids},
        snaps={i: store.snapshot_stats([i], bench) for i in ids},
        busy={i: b for i in ids if (b := store.busy_sessions(i, bench)) is not None},
        pooler={s.step_id: p for s in steps if (p := store.pooler_record(s)) is not None},
        facts={i: f for i in ids if (f := store.step_facts(i))},
        progress={i: pr for i in ids if (pr := store.progress(i))})
