"""A normalised statement from pg_stat_statements read by PostgreSQL's own parser (pglast): what
kind it is, the tables it touches, and for each `$n` the column (or LIMIT) it stands for. Pure:
no server; a statement it cannot read comes back with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, fingerprint, parse_sql
from pglast.parser import ParseError

READS = ("SelectStmt",)
WRITES = ("InsertStmt", "UpdateStmt", "DeleteStmt")
COMPARISONS = frozenset({"=", "<", ">", "<=", ">=", "<>", "!="})
ARITHMETIC = frozenset({"+", "-"})


@dataclass(frozen=True)
class ParamUse:
    """What `$n` stands for: a value of a column ('column'), an amount added to a column
    ('delta': its distribution is not in the statistics), or a LIMIT/OFFSET ('limit')."""

    kind: str
    column: str = ""
    tables: tuple[str, ...] = ()  # the tables the column may belong to (one when qualified or alone)


@dataclass(frozen=True)
class Parsed:
    kind: str  # read | write | transaction | skip
    reason: str = ""  # why it was skipped
    tables: tuple[tuple[str, str], ...] = ()  # (schema or '', name)
    params: dict[int, ParamUse] = field(default_factory=dict)


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
    for n, parents in nodes:
        if isinstance(n, ast.ParamRef) and n.number is not None:
            params[n.number] = _use(n, parents, tables, aliases)
    return Parsed("write" if writes else "read", "", tuple(sorted(set(tables))), params)


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
    up: Any = parents[-1] if parents else None
    n: Any
    for n in reversed(parents):  # the nearest statement: INSERT's column list, UPDATE's SET, a LIMIT
        if isinstance(n, ast.SelectStmt) and p in (n.limitCount, n.limitOffset):
            return ParamUse("limit")
        if isinstance(n, ast.InsertStmt) and n.cols and n.selectStmt is not None:
            for row in getattr(n.selectStmt, "valuesLists", None) or ():
                at = next((i for i, x in enumerate(row) if x is p), None)
                if at is not None and at < len(n.cols):
                    return ParamUse("column", str(n.cols[at].name), (_name(n.relation),))
        if isinstance(n, ast.UpdateStmt) and isinstance(up, ast.ResTarget) and up.val is p:
            return ParamUse("column", str(up.name), (_name(n.relation),))
    if isinstance(up, ast.A_Expr):
        other = up.lexpr if up.lexpr is not p else up.rexpr
        op = up.name[-1].sval if up.name else ""
        compared = op in COMPARISONS or op == "BETWEEN" or getattr(up.kind, "name", "") == "AEXPR_IN"
        if isinstance(other, ast.ColumnRef) and compared:
            return _column(other, "column", tables, aliases)
        if isinstance(other, ast.ColumnRef) and op in ARITHMETIC:
            return _column(other, "delta", tables, aliases)
    return ParamUse("unknown")


def _name(rv: Any) -> str:
    return f"{rv.schemaname}.{rv.relname}" if rv.schemaname else str(rv.relname)


def _column(ref: Any, kind: str, tables: list[tuple[str, str]],
            aliases: dict[str, tuple[str, str]]) -> ParamUse:
    fields = [str(f.sval) for f in ref.fields or () if isinstance(f, ast.String)]
    if not fields:
        return ParamUse("unknown")
    if len(fields) >= 2 and fields[-2] in aliases:
        s, t = aliases[fields[-2]]
        return ParamUse(kind, fields[-1], (f"{s}.{t}" if s else t,))
    return ParamUse(kind, fields[-1], tuple(dict.fromkeys(f"{s}.{t}" if s else t for s, t in tables)))
