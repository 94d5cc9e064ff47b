"""`pgknee store copy SRC DST [RUN ...]`: runs moved between stores of either engine (SQLite to
PostgreSQL, back, or between two of a kind), every table's rows. The source is only read; each
run is written to the destination in one transaction, so a run is there whole or not at all.

Which tables hold a run's rows is read from the schema, not listed here: a table with a run
column (run_id, _run_id) or a step column (step_id, _step_id) is copied, so a new migration's
table comes along by itself. Integer keys are the destination's own: a step's id is the one the
destination gives it (RETURNING), and every step reference is mapped to it; a table's own
row id (SQLite's rowid, PostgreSQL's identity column) is left to the destination. The statements
are store/sql/copy_*.sql, filled with the tables' and columns' names read from the schema (plain
identifiers only, as pgknee's migrations make; a store with another is refused)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pgknee.base.errors import StoreError, UserError, store_error
from pgknee.store.db import Store
from pgknee.store.pg import SCHEMA
from pgknee.store.sql import IDENTIFIER, load

RUN_COLUMNS = ("run_id", "_run_id")
NOT_RUN_DATA = frozenset({"agents"})  # the load generators registered in this store, whichever run they served
STEP_COLUMNS = ("step_id", "_step_id")


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    row_id: str | None  # the table's own integer key, which the destination gives

    @property
    def run_column(self) -> str | None:
        return next((c for c in self.columns if c in RUN_COLUMNS), None)

    @property
    def step_column(self) -> str | None:
        return next((c for c in self.columns if c in STEP_COLUMNS), None)


def tables(store: Store) -> list[Table]:
    """The store's tables of run data, `runs` and `steps` first."""
    out = [t for t in _schema(store) if (t.run_column or t.step_column) and t.name not in NOT_RUN_DATA]
    for t in out:  # its names go into the copy's statements: only plain identifiers, as pgknee's migrations make
        odd = next((n for n in (t.name, *t.columns) if not IDENTIFIER.fullmatch(n)), None)
        if odd is not None:
            raise StoreError(f"{store.label} has a table {t.name!r} with a name pgknee does not make ({odd!r})",
                             "copy from a store only pgknee has written")
    first = {"runs": 0, "steps": 1}
    return sorted(out, key=lambda t: (first.get(t.name, 2), t.name))


def _schema(store: Store) -> list[Table]:
    if store.postgres:
        rows = store.db.execute(load("copy_pg_columns"), (SCHEMA,)).fetchall()
        cols: dict[str, list[tuple[str, bool]]] = {}
        for table, column, identity in rows:
            cols.setdefault(table, []).append((column, identity == "YES"))
        return [Table(t, tuple(c for c, _ in cs), next((c for c, i in cs if i), None)) for t, cs in cols.items()]
    names = [r[0] for r in store.db.execute(load("copy_sqlite_tables")).fetchall()]
    out = []
    for name in names:
        info = store.db.execute(load("copy_sqlite_columns"), (name,)).fetchall()  # name, type, pk
        pks = [r for r in info if r[2]]
        rowid = pks[0][0] if len(pks) == 1 and str(pks[0][1]).upper() == "INTEGER" else None
        out.append(Table(name, tuple(r[0] for r in info), rowid))
    return out


def copy_runs(src: Store, dst: Store, refs: Sequence[str], *, skip_existing: bool,
              say: Callable[[str], None]) -> int:
    """Copy the runs named (all when none) from `src` to `dst`; returns how many were copied."""
    runs = [src.resolve_run(r) for r in refs] if refs else src.runs()
    if not runs:
        raise StoreError(f"no runs in {src.label}", "run 'pgknee run' first")
    src_tables, dst_tables = {t.name: t for t in tables(src)}, {t.name: t for t in tables(dst)}
    missing = sorted(set(src_tables) - set(dst_tables))
    if missing:
        raise StoreError(f"{dst.label} has no table {', '.join(missing)}", "upgrade pgknee or the store")
    copied = 0
    for run in runs:
        if dst.db.execute(load("run_exists"), {"run_id": run.run_id}).fetchone() is not None:
            if skip_existing:
                say(f"run {run.run_id}: already in {dst.label}, skipped")
                continue
            raise UserError(f"run {run.run_id} is already in {dst.label}",
                            "leave it out, or add --skip-existing to copy only the runs it lacks")
        try:
            with dst.transaction():
                rows = _copy_run(src, dst, run.run_id, src_tables)
        except dst.errors as e:
            raise store_error(e, dst.label, f"copying run {run.run_id}", dst.timeout_s) from None
        say(f"run {run.run_id}: {rows:,} rows copied to {dst.label}")
        copied += 1
    return copied


def _copy_run(src: Store, dst: Store, run_id: str, src_tables: dict[str, Table]) -> int:
    steps: dict[int, int] = {}
    total = 0
    for name, table in src_tables.items():
        if name == "steps":  # its rows' new ids, then every reference to them
            columns = [c for c in table.columns if c != "step_id"]
            selected = [*columns, "step_id"]
        else:
            columns = [c for c in table.columns if c != table.row_id or c in STEP_COLUMNS]
            selected = columns
        rows = _rows(src, table, selected, run_id, list(steps))
        if not rows:
            continue
        if name == "steps":
            insert = load("copy_insert_step", columns=columns, values=len(columns))
            for row in rows:
                new = dst.db.execute(insert, row[:-1]).fetchall()
                steps[int(row[-1])] = int(new[0][0])
        else:
            insert = load("copy_insert", table=name, columns=columns, values=len(columns))
            dst.db.executemany(insert, [_mapped(row, columns, steps) for row in rows])
        total += len(rows)
    return total


def _rows(src: Store, table: Table, columns: list[str], run_id: str, step_ids: list[int]) -> list[Any]:
    if table.run_column is not None:
        q = load("copy_run_rows", columns=columns, table=table.name, run_column=table.run_column)
        return list(src.db.execute(q, (run_id,)).fetchall())
    if not step_ids or table.step_column is None:
        return []
    q = load("copy_step_rows", columns=columns, table=table.name, step_column=table.step_column, steps=len(step_ids))
    return list(src.db.execute(q, step_ids).fetchall())


def _mapped(row: Sequence[Any], columns: list[str], steps: dict[int, int]) -> tuple[Any, ...]:
    return tuple(steps[int(v)] if c in STEP_COLUMNS and v is not None else v for c, v in zip(columns, row, strict=True))
