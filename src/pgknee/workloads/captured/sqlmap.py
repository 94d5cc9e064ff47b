"""A normalised statement from pg_stat_statements read by PostgreSQL's own parser (pglast): what
kind it is, the tables it touches, and for each `$n` the column (or LIMIT) it stands for. Pure:
no server; a statement it cannot read comes back with the reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, fingerprint, parse_sql
from pglast.parser import ParseError

READS = ("SelectStmt",)
WRITES = ("InsertStmt", "UpdateStmt", "DeleteStmt")
COMPARISONS = frozenset({"=", "<", ">", "<=", ">=", "<>", "!="})
ARITHMETIC = frozenset({"+", "-"})
BOUNDS = frozenset({"<", "<=", ">", ">="})


@dataclass(frozen=True)
class ParamUse:
    """What `$n` stands for: a value of a column ('column'), an amount added to a column
    ('delta': its distribution is not in the statistics), a LIMIT ('limit') or an OFFSET
    ('offset'), the value of an INSERT without a column list ('position': `column` holds its
    place among the table's columns, from 0), a value inside an expression compared with a
    column ('expression': drawn from that column's statistics, said so), or in a range's bound
    written as a sum (`col < $2 + $3`: $2 the bound, $3 'shift', nothing added in the replay;
    `col >= $1 AND col < $1 + $2`: $2 the range's 'width')."""

    kind: str
    column: str = ""
    tables: tuple[str, ...] = ()  # the tables the column may belong to (one when qualified or alone)
    inserted: bool = False  # a value of an INSERT's VALUES list, as it is (a key may have to be fresh)
    side: str = ""  # a bound of a range on the column: 'lower' (col > $n, BETWEEN's first) or 'upper'


@dataclass(frozen=True)
class Parsed:
    kind: str  # read | write | transaction | skip
    reason: str = ""  # why it was skipped
    tables: tuple[tuple[str, str], ...] = ()  # (schema or '', name)
    params: dict[int, ParamUse] = field(default_factory=dict)
    written: str = ""  # an INSERT's, an UPDATE's or a DELETE's table, as written
    inserts: bool = False  # an INSERT (into `written`)
    locks: bool = False  # a SELECT ... FOR UPDATE / FOR SHARE (of its tables)
    upsert: bool = False  # an INSERT ... ON CONFLICT: the application means its keys to meet rows
    # a SELECT's plain columns, each (the name it returns under, the column, the tables it may be of):
    # a later statement of the transaction may use the value read (the order found, then delivered)
    returns: tuple[ParamUse, ...] = ()
    # the $n of one column's equality (`col = $1`, `col IN ($1, ...)`) that alone pick the rows a plain SELECT of one
    # table returns (no LIMIT, aggregate, grouping, DISTINCT, join or subquery): its rows per call say how the
    # application picks those values (workloads.captured.picks)
    picks: tuple[int, ...] = ()


def statement_fingerprint(text: str) -> str:
    """The parse tree's fingerprint (constants and $n alike, IN lists of any length): the same
    statement on another cluster, where the queryid differs (it hashes relation OIDs)."""
    try:
        return str(fingerprint(text))
    except ParseError:
        return ""


def parse(text: str) -> Parsed:
    try:
        stmts = parse_sql(text)
    except ParseError as e:
        return Parsed("skip", f"PostgreSQL's parser does not read it ({e.args[0]})")
    if len(stmts) != 1:
        return Parsed("skip", f"{len(stmts)} statements in one entry")
    stmt = stmts[0].stmt
    name = type(stmt).__name__
    if name == "TransactionStmt":
        return Parsed("transaction")
    if name not in READS + WRITES:
        what = "COPY" if name == "CopyStmt" else name.removesuffix("Stmt")
        return Parsed("skip", f"{what} is not a query pgbench can replay (DDL, COPY or a utility statement)")
    if getattr(stmt, "intoClause", None) is not None:
        return Parsed("skip", "SELECT INTO creates a table")
    nodes = list(_walk(stmt, ()))
    writes = name in WRITES or any(type(n).__name__ in WRITES for n, _ in nodes)
    tables, aliases = _tables(nodes)
    params: dict[int, ParamUse] = {}
    bare: dict[int, list[ParamUse]] = {}  # each $n's every use
    for n, parents in nodes:
        if isinstance(n, ast.ParamRef) and n.number is not None:
            params[n.number] = _use(n, parents, tables, aliases)
            bare.setdefault(n.number, []).append(params[n.number])
    for n, _ in nodes:
        if isinstance(n, ast.A_Expr) and n.name and n.name[-1].sval in BOUNDS:
            params.update(_sum_bound(n, bare, tables, aliases))
    written = _name(stmt.relation) if isinstance(stmt, ast.InsertStmt | ast.UpdateStmt | ast.DeleteStmt) else ""
    inserts = isinstance(stmt, ast.InsertStmt)
    locks = isinstance(stmt, ast.SelectStmt) and bool(stmt.lockingClause)
    upsert = isinstance(stmt, ast.InsertStmt) and stmt.onConflictClause is not None
    return Parsed("write" if writes else "read", "", tuple(sorted(set(tables))), params, written, inserts, locks,
                  upsert, _returns(stmt, tables, aliases), _picks(stmt, nodes))


def _picks(stmt: Any, nodes: list[tuple[Any, tuple[Any, ...]]]) -> tuple[int, ...]:
    """The parameters of `col = $n` or `col IN ($n, ...)`, the one condition of a plain SELECT of
    one table, whose every row it returns (nothing else chooses or folds them); () otherwise."""
    if not isinstance(stmt, ast.SelectStmt) or getattr(stmt.op, "name", "") != "SETOP_NONE" \
            or [type(f) for f in stmt.fromClause or ()] != [ast.RangeVar] \
            or any(getattr(stmt, a) for a in ("groupClause", "havingClause", "distinctClause", "limitCount",
                                              "limitOffset", "windowClause", "withClause", "lockingClause")) \
            or any(isinstance(n, ast.FuncCall | ast.SubLink) for n, _ in nodes):
        return ()
    where: Any = stmt.whereClause
    if not isinstance(where, ast.A_Expr) or not where.name or where.name[-1].sval != "=":
        return ()
    values = where.rexpr if isinstance(where.rexpr, tuple | list) else (where.rexpr,)
    numbers = [v.number for v in values if isinstance(v, ast.ParamRef) and v.number is not None]
    return tuple(numbers) if isinstance(where.lexpr, ast.ColumnRef) and len(numbers) == len(values) else ()


def _returns(stmt: Any, tables: list[tuple[str, str]], aliases: dict[str, tuple[str, str]]) -> tuple[ParamUse, ...]:
    """A plain SELECT's columns returned as they are (not `*`, not an expression): each a ParamUse
    of kind 'returned', its `side` the name it is returned under."""
    if not isinstance(stmt, ast.SelectStmt) or stmt.targetList is None or stmt.op is None \
            or getattr(stmt.op, "name", "") != "SETOP_NONE":
        return ()
    out = []
    for t in stmt.targetList:
        if isinstance(t, ast.ResTarget) and isinstance(t.val, ast.ColumnRef) \
                and all(isinstance(f, ast.String) for f in t.val.fields or ()):
            use = _column(t.val, "returned", tables, aliases)
            if use.column:
                out.append(dataclasses.replace(use, side=str(t.name or use.column)))
    return tuple(out)


def _walk(node: Any, parents: tuple[Any, ...]) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    if isinstance(node, tuple | list):
        for x in node:
            yield from _walk(x, parents)
        return
    if not isinstance(node, ast.Node):
        return
    yield node, parents
    for attr in node:
        yield from _walk(getattr(node, attr), (*parents, node))


def _tables(nodes: list[tuple[Any, tuple[Any, ...]]]) -> tuple[list[tuple[str, str]], dict[str, tuple[str, str]]]:
    ctes = {n.ctename for n, _ in nodes if isinstance(n, ast.CommonTableExpr)}
    tables: list[tuple[str, str]] = []
    aliases: dict[str, tuple[str, str]] = {}
    for n, _ in nodes:
        if isinstance(n, ast.RangeVar) and not (n.schemaname is None and n.relname in ctes):
            t = (str(n.schemaname or ""), str(n.relname))
            tables.append(t)
            aliases[str(n.alias.aliasname) if n.alias is not None else t[1]] = t
    return tables, aliases


def _use(p: ast.ParamRef, parents: tuple[Any, ...], tables: list[tuple[str, str]],
         aliases: dict[str, tuple[str, str]]) -> ParamUse:
    up: Any = parents[-1]  # a $n is never the statement itself, the one node _walk gives no parents
    for n in reversed(parents):  # the nearest statement: INSERT's values, UPDATE's SET, a LIMIT
        found = _in_statement(p, n, up)
        if found is not None:
            return found
    if isinstance(up, ast.A_Expr):
        other = up.lexpr if up.lexpr is not p else up.rexpr
        op = up.name[-1].sval if up.name else ""
        compared = op in COMPARISONS or op == "BETWEEN" or getattr(up.kind, "name", "") == "AEXPR_IN"
        if isinstance(other, ast.ColumnRef) and compared:
            return dataclasses.replace(_column(other, "column", tables, aliases), side=_side(p, up, op))
        if isinstance(other, ast.ColumnRef) and op in ARITHMETIC:
            return _column(other, "delta", tables, aliases)
    return _in_expression(p, parents, tables, aliases)


def _sum_bound(cmp: Any, uses: dict[int, list[ParamUse]], tables: list[tuple[str, str]],
               aliases: dict[str, tuple[str, str]]) -> dict[int, ParamUse]:
    """A bound of a range written as a sum of two parameters: `col < $2 + $3` (an application's
    `:id + 50`, both numbered by pg_stat_statements) makes $2 the bound and $3 a 'shift' (the
    replay draws $2 as the bound and adds 0); `col < $1 + $2` beside `col >= $1` makes $2 the
    range's 'width' ($1 stays the lower bound)."""
    op = cmp.name[-1].sval
    for col, other in ((cmp.lexpr, cmp.rexpr), (cmp.rexpr, cmp.lexpr)):
        if not (isinstance(col, ast.ColumnRef) and isinstance(other, ast.A_Expr) and other.name
                and other.name[-1].sval in ARITHMETIC and isinstance(other.lexpr, ast.ParamRef)
                and isinstance(other.rexpr, ast.ParamRef)):
            continue
        base, amount = other.lexpr.number, other.rexpr.number
        if base is None or amount is None:
            continue
        side = _side(other, cmp, op)
        column = _column(col, "column", tables, aliases)
        own = [u for u in uses.get(base, ()) if u.side and u.kind == "column" and u.column == column.column]
        if own and side == "upper" and own[0].side == "lower" and other.name[-1].sval == "+":
            return {base: own[0], amount: dataclasses.replace(column, kind="width", side="upper")}
        if not own:
            return {base: dataclasses.replace(column, side=side), amount: dataclasses.replace(column, kind="shift")}
    return {}


def _side(p: Any, up: Any, op: str) -> str:
    """Which bound of a range on the column `p` is: col >= $n and col < $m, BETWEEN $n AND $m."""
    if op == "BETWEEN":
        low, high = up.rexpr  # the grammar's BETWEEN: always its two bounds (list_make2)
        return "lower" if low is p else "upper" if high is p else ""
    if op not in ("<", "<=", ">", ">="):
        return ""
    below = op in ("<", "<=")  # col < $n: $n bounds it from above; $n < col from below
    return "upper" if below == (up.rexpr is p) else "lower"


def _in_expression(p: ast.ParamRef, parents: tuple[Any, ...], tables: list[tuple[str, str]],
                   aliases: dict[str, tuple[str, str]]) -> ParamUse:
    """A `$n` inside an expression compared with a column (`region = $1 % $2`): its values are the
    column's own, as far as anything says ('expression', drawn from that column); else unknown."""
    for n in reversed(parents):
        if isinstance(n, ast.A_Expr) and n.name and n.name[-1].sval in COMPARISONS:
            for side, other in ((n.lexpr, n.rexpr), (n.rexpr, n.lexpr)):
                if isinstance(other, ast.ColumnRef) and any(x is p for x, _ in _walk(side, ())):
                    return _column(other, "expression", tables, aliases)
    return ParamUse("unknown")


def _in_statement(p: ast.ParamRef, n: Any, up: Any) -> ParamUse | None:
    """What the statement `n` makes of `p`: a LIMIT or an OFFSET, an INSERT's value (by its column
    list, or by its place when there is none), UPDATE's SET; None when it says nothing of it."""
    if isinstance(n, ast.SelectStmt) and p in (n.limitCount, n.limitOffset):
        return ParamUse("limit" if p is n.limitCount else "offset")
    if isinstance(n, ast.InsertStmt) and n.selectStmt is not None:
        for row in getattr(n.selectStmt, "valuesLists", None) or ():
            at = next((i for i, x in enumerate(row) if x is p), None)
            if at is not None and n.cols and at < len(n.cols):
                return ParamUse("column", str(n.cols[at].name), (_name(n.relation),), inserted=True)
            if at is not None and not n.cols:  # INSERT INTO t VALUES (...): the table's columns in order
                return ParamUse("position", str(at), (_name(n.relation),), inserted=True)
    if isinstance(n, ast.UpdateStmt) and isinstance(up, ast.ResTarget) and up.val is p:
        return ParamUse("column", str(up.name), (_name(n.relation),))
    return None


def qualified(schema: str, name: str) -> str:
    """A table's name as written: schema.name, or the name alone when no schema was written."""
    return f"{schema}.{name}" if schema else name


def _name(rv: Any) -> str:
    return qualified(str(rv.schemaname or ""), str(rv.relname))


def _column(ref: Any, kind: str, tables: list[tuple[str, str]],
            aliases: dict[str, tuple[str, str]]) -> ParamUse:
    fields = [str(f.sval) for f in ref.fields or () if isinstance(f, ast.String)]
    if not fields:
        return ParamUse("unknown")
    if len(fields) >= 2 and fields[-2] in aliases:
        return ParamUse(kind, fields[-1], (qualified(*aliases[fields[-2]]),))
    return ParamUse(kind, fields[-1], tuple(dict.fromkeys(qualified(s, t) for s, t in tables)))
