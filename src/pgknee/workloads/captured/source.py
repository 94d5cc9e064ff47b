"""The capture's source, read: the tables a statement names (on the capturing role's search_path),
a parameter's column (its type and pg_stats), an INSERT's columns by place and its unique keys,
the foreign keys between the captured tables. Catalogue and statistics reads only, in the
capture's read-only transaction, each remembered for the capture."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from pgknee.workloads import queries
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import picks, sqlmap


@dataclass
class Source:
    conn: psycopg.Connection[Any]
    tables: dict[str, str | None]  # as written -> schema.table, None: not visible
    stats: dict[tuple[str, str], gen.ColumnStats | None]
    sequences: set[str] = dataclasses.field(default_factory=set)  # schema.name of the sequences read as relations
    types: dict[str, dict[int, str]] = dataclasses.field(default_factory=dict)  # a statement's parameters' types


def find_table(src: Source, written: str) -> str:
    """The table a statement names (`schema.name`, or `name` on the role's search_path) as
    schema.name; raises CannotDraw when the capturing role cannot see it."""
    if written not in src.tables:
        row = src.conn.execute(queries.text("captured_table"), (written,)).fetchone()
        # an extension's relation (pg_stat_statements' view, the capture's own reads) is not the application's
        src.tables[written] = None if row is None else f"pg_catalog.{row[1]}" if row[2] else f"{row[0]}.{row[1]}"
        if row is not None and row[3] and not row[2]:
            src.sequences.add(f"{row[0]}.{row[1]}")
    found = src.tables[written]
    if found is None:
        raise gen.CannotDraw(f"table {written} is not visible to the capturing role on its search_path "
                             "(set the role's search_path like the application's)")
    return found


def placed(src: Source, n: int, use: sqlmap.ParamUse) -> sqlmap.ParamUse:
    """An INSERT's value without a column list: the table's column at its place."""
    table = find_table(src, use.tables[0])
    schema, name = table.split(".", 1)
    row = src.conn.execute(queries.text("captured_column_at"), {"qualified": f'"{schema}"."{name}"',
                                                               "place": int(use.column)}).fetchone()
    if row is None:
        raise gen.CannotDraw(f"${n}: {table} has no column at place {int(use.column) + 1}")
    return sqlmap.ParamUse("column", str(row[0]), (table,), inserted=True)


def first_column(src: Source, use: sqlmap.ParamUse) -> tuple[str, gen.ColumnStats | None]:
    """The table of a parameter's column (the first its statement may mean) and the column's
    statistics; ('', None) when the use names no table."""
    if not use.tables:
        return "", None
    table = find_table(src, use.tables[0])
    return table, stats(src, table, use.column)


def stats(src: Source, table: str, column: str) -> gen.ColumnStats | None:
    key = (table, column)
    if key not in src.stats:
        schema, name = table.split(".", 1)
        row = src.conn.execute(queries.text("captured_column_stats"), {
            "schema": schema, "table": name, "qualified": f'"{schema}"."{name}"', "column": column}).fetchone()
        src.stats[key] = None if row is None else gen.ColumnStats(
            str(row[0]), float(row[1] or 0), float(row[2] or 0), tuple(row[3] or ()), tuple(row[4] or ()),
            tuple(row[5] or ()), max(0.0, float(row[6])))
    return src.stats[key]


def unique_keys(src: Source, table: str) -> list[tuple[bool, list[str], list[bool]]]:
    """Each unique key of the table (the primary key first): its columns, and whether each has a default."""
    schema, name = table.split(".", 1)
    rows = src.conn.execute(queries.text("captured_unique_keys"), {"qualified": f'"{schema}"."{name}"'}).fetchall()
    return [(bool(p), list(c), list(d)) for p, c, d in rows]


def foreign_keys(src: Source, tables: list[str]) -> list[tuple[str, str]]:
    """Each column a foreign key among the tables links (schema.table.column of the referencing
    column, and of the one it references), pair by pair."""
    rows = src.conn.execute(queries.text("captured_foreign_keys"), {"tables": tables}).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def keys_of(src: Source, table: str, column: str, st: gen.ColumnStats) -> picks.Keys:
    """The keys an application picking a column's values by key draws from: those of the column
    a foreign key says its values are among (their distinct values), else the span
    of its whole numbers when they fill it (picks.whole_span); picks.NO_KEYS when neither is known."""
    for parent in [p for c, p in foreign_keys(src, [table]) if c == f"{table}.{column}"]:
        theirs = stats(src, *parent.rsplit(".", 1))
        if theirs is not None and theirs.rows > 0 and (theirs.mcv or len(theirs.histogram) >= 2):
            return picks.Keys(dataclasses.replace(theirs, type=st.type), picks.distinct(theirs),
                              f"the keys of {parent}, which a foreign key says its values are among")
    return picks.whole_span(st)


def param_types(src: Source, query: str) -> dict[int, str]:
    """Each `$n`'s type as the server infers it, by n: the statement prepared (never run: the
    capture's transaction is read-only, and a statement is checked for that when it runs, not when
    it is prepared) and its parameter types read back; none when the server cannot prepare it."""
    if query not in src.types:
        try:
            with src.conn.transaction():  # a savepoint: a statement the server refuses leaves the capture's alone
                src.conn.execute(sql.SQL("PREPARE pgknee_capture_types AS {}").format(sql.SQL(query)))
                # the statement just prepared: its one row of pg_prepared_statements
                [(types,)] = src.conn.execute(queries.text("captured_param_types")).fetchall()
                src.conn.execute("DEALLOCATE pgknee_capture_types")
            src.types[query] = {n: str(t) for n, t in enumerate(types, 1)}
        except psycopg.Error:
            src.types[query] = {}
    return src.types[query]
