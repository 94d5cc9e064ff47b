"""`pgknee workload capture`: the source database's own workload, read from pg_stat_statements
(statements, calls, time, rows) and pg_stats (each parameter's column: common values, their
frequencies, histogram bounds), in one read-only transaction. Nothing is written to the source.
No data is read but what those two views show, with one exception said in each script it
concerns: a SELECT with a range (`col >= $4 AND col < $3`) is run a few times under EXPLAIN
(ANALYZE, BUFFERS) to find the range's width (probe.py)."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from typing import Any

import psycopg

from pgknee.base.dsn import redact_dsn
from pgknee.base.errors import TargetError, UserError, first_line
from pgknee.targets.base import Endpoint
from pgknee.workloads import queries
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import grouping, observe, pauses, picks, ranges, sqlmap, txscript
from pgknee.workloads.captured import transactions as tx
from pgknee.workloads.captured.manifest import Manifest, Param, ScriptEntry, Skipped, Statement
from pgknee.workloads.captured.observe import StatementCounts as Counts
from pgknee.workloads.captured.source import (
    Source,
    find_table,
    first_column,
    foreign_keys,
    keys_of,
    param_types,
    placed,
    stats,
    unique_keys,
)
from pgknee.workloads.captured.writes import fresh_keys, upsert_rows

ORDERS = {"time": "total_exec_time", "calls": "calls"}
MAX_WEIGHT = 10_000  # the most frequent script's weight; the others in proportion (at least 1)
DELTA_VALUE = "1"  # an amount added to a column: its distribution is not in the statistics
SYSTEM = ("pg_catalog", "information_schema")


def capture(dsn: str, *, top: int, order_by: str, say: Callable[[str], None],
            observe_s: float | None = None, interval_s: float = observe.INTERVAL_S,
            progress: Callable[[float], None] = lambda _: None) -> tuple[Manifest, dict[str, str]]:
    """The manifest and the scripts' texts (file name -> text). With `observe_s`, the application
    is watched for that long first (observe.py): the statements are its calls over the window,
    grouped into its transactions (grouping.py)."""
    endpoint = Endpoint.resolve(dsn)
    conn = endpoint.connect("capture", autocommit=False)
    watched: observe.Watched | None = None
    try:
        conn.read_only = True  # the source is only read: a write would fail, not happen
        with conn.transaction():
            version = _check_statements(conn)
        if observe_s is not None:
            conn.autocommit = True  # each sample sees the views as they are now
            watched = observe.watch(conn, observe_s, interval_s, version, progress)
            conn.autocommit = False
        with conn.transaction():
            entries = _observed_entries(watched, order_by) if watched is not None else \
                _entries(conn, version, order_by)
            src = Source(conn, {}, {})
            manifest, texts = _build(src, entries, top, order_by)
            shape = _shape(src, manifest["statements"], manifest["tables"])
            database = str(_one(conn, queries.text("captured_current_database")))
            sysid = _system_identifier(conn)
    except psycopg.Error as e:
        raise TargetError(f"reading the workload from {endpoint.label} failed: {first_line(e)}") from None
    finally:
        conn.close()
    if watched is not None:
        manifest = _transactions(manifest, texts, watched, shape)
    else:
        manifest["grouping"] = ("not observed: each statement replays in autocommit, and the time the application "
                                "holds a connection inside its transactions is unknown (capture with --observe 60s "
                                "while the application runs)")
    if not sysid:
        say("the role could not read pg_control_system(): a replay cannot tell this server from a copy, "
            "so it will refuse writes (grant pg_monitor to the capturing role and capture again)")
    return Manifest(redact_dsn(dsn), database, sysid, version, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    **manifest), texts


def _one(conn: psycopg.Connection[Any], sql: str) -> Any:
    """The value of a query that returns one row always (a function's without FROM, a count)."""
    [(value,)] = conn.execute(sql).fetchall()
    return value


def _check_statements(conn: psycopg.Connection[Any]) -> int:
    version = int(_one(conn, queries.text("captured_server_version")))
    if version < 140000:
        raise UserError(f"the source runs PostgreSQL {version // 10000}: capture needs 14 or later "
                        "(pg_stat_statements' toplevel and total_exec_time)")
    if not _one(conn, queries.text("captured_statements_installed")):
        raise UserError("pg_stat_statements is not installed in this database",
                        "add pg_stat_statements to shared_preload_libraries, restart, and run CREATE EXTENSION "
                        "pg_stat_statements in the database (as its owner)")
    hidden, total = conn.execute(queries.text("captured_statements_hidden")).fetchone() or (0, 0)
    if total and hidden == total:
        raise UserError("pg_stat_statements hides every statement's text from this role",
                        "GRANT pg_read_all_stats TO the capturing role (it reads statistics only)")
    return version


def _observed_entries(w: observe.Watched, order_by: str) -> list[Counts]:
    """The statements' change over the window, ordered as pg_stat_statements' totals would be."""
    return _ordered([dataclasses.replace(s, queryid=0) for s in w.statements], order_by)


def _ordered(rows: list[Counts], order_by: str) -> list[Counts]:
    return sorted(rows, key=lambda r: (-r.calls if order_by == "calls" else -r.total_ms, r.query))


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What the transactions' scripts need of the source's catalogue: the foreign keys' linked
    columns, and each INSERT's table's unique-key columns."""

    links: dict[str, str]
    parents: dict[str, set[str]]  # a table -> the tables its foreign keys reference
    keys: dict[str, frozenset[str]]  # statement id -> its INSERT's unique-key columns (schema.table.column)
    writes: dict[str, str]  # statement id -> the table its INSERT, UPDATE or DELETE writes
    locks: dict[str, frozenset[str]]  # statement id -> the tables its SELECT ... FOR UPDATE locks
    returns: dict[str, tuple[tuple[str, str], ...]]  # statement id -> (name, schema.table.column) it reads


def _shape(src: Source, statements: list[Statement], tables: list[str]) -> _Shape:
    keys: dict[str, frozenset[str]] = {}
    writes: dict[str, str] = {}
    locks: dict[str, frozenset[str]] = {}
    returns: dict[str, tuple[tuple[str, str], ...]] = {}
    for s in statements:
        parsed = sqlmap.parse(s.query)
        if parsed.written:
            writes[s.id] = find_table(src, parsed.written)
        if parsed.inserts:
            keys[s.id] = frozenset(f"{writes[s.id]}.{c}" for _, cols, _ in unique_keys(src, writes[s.id]) for c in cols)
        if parsed.locks:
            locks[s.id] = frozenset(s.tables)
        if read := tuple(r for use in parsed.returns if (r := _returned(src, use)) is not None):
            returns[s.id] = read
    pairs = foreign_keys(src, tables)  # none for no tables
    parents: dict[str, set[str]] = {}
    for child, parent in pairs:
        parents.setdefault(child.rsplit(".", 1)[0], set()).add(parent.rsplit(".", 1)[0])
    return _Shape(txscript.links_of(pairs), parents, keys, writes, locks, returns)


def _returned(src: Source, use: sqlmap.ParamUse) -> tuple[str, str] | None:
    """A column a SELECT returns as a later statement of its transaction may use it: (the name it
    is returned under, schema.table.column); an integer's only (a read that finds no row leaves
    -1, which no key is)."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", use.side):
        return None
    for t in use.tables:
        try:
            table = find_table(src, t)
        except gen.CannotDraw:
            continue
        st = stats(src, table, use.column)
        if st is not None:
            return (use.side, f"{table}.{use.column}") if gen.base_type(st.type) in gen.INTEGERS else None
    return None


def _transactions(manifest: dict[str, Any], texts: dict[str, str], w: observe.Watched, shape: _Shape
                  ) -> dict[str, Any]:
    """The observation into the manifest; the statements grouped into the application's
    transactions, each a script that holds its transaction open as the application did."""
    statements: list[Statement] = manifest["statements"]
    by_id = {s.id: s for s in statements}
    by_text = {s.query: s.queryid for s in w.statements}
    queryids = {by_text[s.query]: s.id for s in statements if s.query in by_text}
    groups, how = grouping.group({s.id: s.calls for s in statements}, queryids, w.transactions, w.begins, w.moves)
    obs = w.observation
    if w.begins is None or w.begins < sum(1 for t in w.transactions if t.explicit):  # BEGIN not counted as it ran
        inside = {queryids[q] for t in w.transactions if t.explicit for q in t.statements if q in queryids}
        grouped = {sid for g in groups for sid in g.statements}
        alone = sum(s.calls for s in statements if s.id not in grouped and s.id not in inside)  # in autocommit
        groups = grouping.counted(groups, w.transactions, queryids, obs.interval_s,
                                  max(0.0, obs.transactions_per_s * obs.window_s - alone))
    explicit = [(t.idle_s, wt) for t, wt in tx.weights(w.transactions, obs.interval_s) if t.explicit]
    ordered = [txscript.ordered([_part(by_id[sid], texts[f"{sid}.sql"], g, shape) for sid in g.statements],
                                shape.parents) for g in groups]
    idle = _idle_per_transaction(obs, groups, ordered)
    in_group: dict[str, int] = {}
    scripts: list[tuple[ScriptEntry, int]] = []
    for i, (g, parts) in enumerate(zip(groups, ordered, strict=True), 1):
        name = f"t{i:02d}"
        g = dataclasses.replace(g, statements=tuple(p.sid for p in parts))
        points = pauses.idle_points(explicit, idle[i - 1])
        texts[f"{name}.sql"] = txscript.text(name, g, parts, shape.links, points, pauses.turnaround_ms(obs.think_ms))
        scripts.append((ScriptEntry(name, f"{name}.sql", 0, list(g.statements), g.evidence, points), g.transactions))
        for part in parts:
            in_group[part.sid] = in_group.get(part.sid, 0) + round(txscript.runs(part) * g.transactions)
    for s in statements:  # what a statement ran outside its transaction, in autocommit
        rest = s.calls - in_group.get(s.id, 0)
        if rest > grouping.CALLS_MATCH * s.calls:
            scripts.append((ScriptEntry(s.id, f"{s.id}.sql", 0, [s.id]), rest))
    top = max((n for _, n in scripts), default=1)
    manifest["scripts"] = [dataclasses.replace(sc, weight=max(1, round(n * MAX_WEIGHT / top))) for sc, n in scripts]
    manifest["observed"], manifest["grouping"] = obs, how
    return manifest


def _idle_per_transaction(obs: Any, groups: list[grouping.Group], parts: list[list[txscript.Part]]
                          ) -> list[float | None]:
    """Each group's idle per transaction (ms): the counters' idle in transaction over the window,
    shared by the groups' transactions in proportion to their gaps between statements (a client
    idles between every two: an order of 40 statements idled 26 ms where a payment of 7 idled 5;
    one share for all held the payment's warehouse lock twice as long). None: not counted."""
    total = obs.counters.get("idle_in_transaction_time")
    if total is None and obs.explicit_idle_mean_ms is not None:
        total = obs.explicit_idle_mean_ms * obs.explicit_per_s * obs.window_s
    gaps = [txscript.gaps(p) for p in parts]
    weight = sum(g.transactions * n for g, n in zip(groups, gaps, strict=True))
    return [total * n / weight if total is not None and weight > 0 else None for n in gaps]


def _part(s: Statement, script: str, g: grouping.Group, shape: _Shape) -> txscript.Part:
    metas, sql = _pieces(script)
    return txscript.Part(s.id, tuple(metas), sql, tuple(s.params), s.calls / max(1, g.transactions),
                         shape.keys.get(s.id, frozenset()), s.id in shape.keys, shape.writes.get(s.id, ""),
                         shape.locks.get(s.id, frozenset()), shape.returns.get(s.id, ()))


def _pieces(script: str) -> tuple[list[str], str]:
    """A statement's script as pgknee wrote it: its meta-commands (each with its continuation lines,
    a backslash ending the line before) and its SQL, comments left out."""
    metas: list[str] = []
    sql: list[str] = []
    going_on = False
    for line in script.splitlines():
        if going_on or line.startswith("\\"):
            if going_on:
                metas[-1] += "\n" + line
            else:
                metas.append(line)
            going_on = line.endswith("\\")
        elif line.strip() and not line.startswith("--"):
            sql.append(line)
    return metas, "\n".join(sql)


def _entries(conn: psycopg.Connection[Any], version: int, order_by: str) -> list[Counts]:
    sql = queries.load("captured_entries", version)  # _check_statements refused a server before 14
    return _ordered([Counts(0, str(q), int(c), float(t), int(r), int(b))
                     for q, c, t, r, b in conn.execute(sql).fetchall()], order_by)


def _system_identifier(conn: psycopg.Connection[Any]) -> str:
    try:
        with conn.transaction():
            return str(_one(conn, queries.text("captured_system_identifier")))
    except psycopg.errors.InsufficientPrivilege:
        return ""


def _build(src: Source, entries: list[Counts], top: int, order_by: str) -> tuple[dict[str, Any], dict[str, str]]:
    calls_all = sum(e.calls for e in entries) or 1
    time_all = sum(e.total_ms for e in entries) or 1.0
    statements: list[Statement] = []
    skipped: list[Skipped] = []
    texts: dict[str, str] = {}
    for e in entries[:top]:
        sid = f"s{len(statements) + 1:02d}"
        try:
            st, text = _statement(src, sid, e, (calls_all, time_all))
        except gen.CannotDraw as why:
            skipped.append(Skipped(_shown(e.query), e.calls, str(why)))
            continue
        statements.append(st)
        texts[f"{sid}.sql"] = text
    top_calls = max((s.calls for s in statements), default=1)
    scripts = [ScriptEntry(s.id, f"{s.id}.sql", max(1, round(s.calls * MAX_WEIGHT / top_calls)), [s.id])
               for s in statements]
    tables = sorted({t for s in statements for t in s.tables})
    return ({"order_by": order_by, "top": top, "tables": tables, "statements": statements, "scripts": scripts,
             "skipped": skipped}, texts)


def _shown(query: str) -> str:
    """A statement's text as the manifest may keep it: pg_stat_statements does not normalise a
    utility statement's constants (CREATE ROLE ... PASSWORD '...'), nor can pgknee check one it
    cannot parse: their text stays out."""
    parsed = sqlmap.parse(query)
    if parsed.kind != "skip" or query == "<insufficient privilege>":
        return query
    return "(text not kept: a statement pgknee does not replay may hold literal values)"


def _statement(src: Source, sid: str, e: Counts, totals: tuple[int, float]) -> tuple[Statement, str]:
    query, calls, total, rows = e.query, e.calls, e.total_ms, e.rows
    if query == "<insufficient privilege>":
        raise gen.CannotDraw("its text is hidden from this role (GRANT pg_read_all_stats)")
    parsed = sqlmap.parse(query)
    if parsed.kind == "transaction":
        raise gen.CannotDraw("transaction control: each script runs in autocommit unless the manifest groups "
                             "statements (see BEGIN's calls against the statements')")
    if parsed.kind == "skip":
        raise gen.CannotDraw(parsed.reason)
    tables = [find_table(src, sqlmap.qualified(s, t)) for s, t in parsed.tables]
    if not tables or all(t.split(".")[0] in SYSTEM for t in tables):
        raise gen.CannotDraw("it reads no table of the application (only the catalogues, or none)")
    if all(t in src.sequences or t.split(".")[0] in SYSTEM for t in tables):
        # pg_dump before 18 reads each sequence so (SELECT last_value, is_called FROM s), once per dump
        raise gen.CannotDraw(f"it reads the state of sequence {', '.join(t for t in tables if t in src.sequences)} "
                             "as a relation, as pg_dump and monitoring tools do (an application calls nextval())")
    fresh = (upsert_rows if parsed.upsert else fresh_keys)(src, sid, parsed) if parsed.inserts else {}
    each = {n: fresh[n] if n in fresh else _typed(src, sid, query, n, use) if _untied(src, query, n, use)
            else _param(src, sid, n, use, rows / max(calls, 1)) for n, use in sorted(parsed.params.items())}
    each = _picked(src, sid, parsed.picks, each, rows / max(calls, 1))
    after = ranges.drawn_together(src, sid, (query, parsed), each, e.blocks / max(calls, 1))
    params = [p for p, _ in each.values()]
    lines: list[str] = []
    for n, (_, d) in each.items():
        if n not in after:  # a range's upper bound comes after its lower, which it is drawn from
            lines += [*d.lines, *(ln for u, lo in after.items() if lo == n for ln in each[u][1].lines)]
    placeholders = {n: d.placeholder for n, (_, d) in each.items()}
    sql = _substituted(query, placeholders)
    # as the target's pg_stat_statements will show it: a constant given for a parameter is a parameter again
    constant = {q.n for q in params if q.use in ("typed", "shift") and "(" not in placeholders[q.n]}
    replayed = re.sub(r":s\d+_p\d+", "$1", _substituted(query, {**placeholders, **dict.fromkeys(constant, "$1")}))
    st = Statement(sid, query, parsed.kind, calls, round(total, 3), round(total / max(calls, 1), 4), rows,
                   round(calls / totals[0], 6), round(total / totals[1], 6), tables,
                   sqlmap.statement_fingerprint(replayed), params)
    head = [f"-- pgknee captured statement {sid}: {calls} calls, {st.mean_ms:.3f} ms mean, "
            f"{rows / max(calls, 1):.1f} rows per call, {st.share_time:.1%} of the database's time"]
    head += [f"-- ${p.n}: {p.column or p.use} ({p.type or '-'}): {p.drawn}" for p in params]
    return st, "\n".join([*head, *lines, sql.rstrip().rstrip(";") + ";", ""])


def _picked(src: Source, sid: str, ns: tuple[int, ...], each: dict[int, tuple[Param, gen.Drawn]], seen: float
            ) -> dict[int, tuple[Param, gen.Drawn]]:
    """The values that alone pick a call's rows (`col = $1`, `col IN ($1, ...)`) drawn as the rows
    its calls returned say the application picks them (picks.py): by the column's rows or by keys."""
    params = [each[n][0] for n in ns]
    if not params or {(p.use, p.column) for p in params} != {("column", params[0].column)}:
        return each  # drawn otherwise (a fresh key, a parent's statistics): the rows say nothing of them
    table, column = params[0].column.rsplit(".", 1)
    st = stats(src, table, column)
    assert st is not None  # _param drew these values from this column's statistics
    keys = keys_of(src, table, column, st)
    return picks.redrawn(sid, each, ns, picks.judge(st, keys.count, len(ns), seen), keys)


def _substituted(query: str, values: dict[int, str]) -> str:
    """The statement with each `$n` that `values` holds replaced by its value."""
    return re.sub(r"\$(\d+)(?!\d)", lambda m: values.get(int(m.group(1)), m.group(0)), query)


def _param(src: Source, sid: str, n: int, use: sqlmap.ParamUse, rows_per_call: float
           ) -> tuple[Param, gen.Drawn]:
    var = f"{sid}_p{n}"
    if use.kind in ("limit", "offset", "delta"):
        return _unseen(var, n, use, rows_per_call)
    if use.kind in ("shift", "width"):  # a range's bound written as a sum: drawn with its range (ranges.py)
        return ranges.in_sum(src, var, n, use)
    if use.kind == "position":  # INSERT INTO t VALUES (...): the table's column at that place
        use = placed(src, n, use)
    if use.kind not in ("column", "expression"):
        raise gen.CannotDraw(f"${n} is not compared with a column, set into one or a LIMIT: pgknee cannot tell "
                             "its values")
    for t in use.tables:
        table = find_table(src, t)
        st = stats(src, table, use.column)
        if st is None:
            continue
        stats_type = st.type
        st, via = _evidence(src, f"{table}.{use.column}", st)
        if st is None:
            return _unknown(n, var, f"{table}.{use.column}", stats_type, via)
        try:
            drawn = gen.draw(var, st)
        except gen.CannotDraw as e:
            raise gen.CannotDraw(f"${n} ({table}.{use.column}): {e}") from None
        how = (f"{via}{len(st.mcv)} common values ({sum(st.mcf):.0%} of rows), then "
               f"{max(0, len(st.histogram) - 1)} histogram buckets")
        if use.kind == "expression":
            how = (f"inside an expression compared with {use.column}: drawn from that column's statistics, the "
                   f"nearest evidence ({how}; edit the script if the application's values differ)")
        return Param(n, use.kind, f"{table}.{use.column}", st.type, how, list(st.mcv[:10]),
                     [round(f, 5) for f in st.mcf[:10]]), drawn
    raise gen.CannotDraw(f"${n}: column {use.column} not found in {', '.join(use.tables)}")


def _evidence(src: Source, column: str, st: gen.ColumnStats) -> tuple[gen.ColumnStats | None, str]:
    """The statistics a column's values are drawn from: its own; when it has none (its table empty
    when last analysed: where an application inserts its new rows) those of the column a foreign key
    says its values are among, said so; else None and why."""
    if st.mcv or len(st.histogram) >= 2:
        return st, ""
    for parent in [parent for child, parent in foreign_keys(src, [column.rsplit(".", 1)[0]]) if child == column]:
        theirs = stats(src, *parent.rsplit(".", 1))
        if theirs is not None and (theirs.mcv or len(theirs.histogram) >= 2):
            return dataclasses.replace(theirs, type=st.type), (
                f"its column has no statistics (its table empty when analysed): from {parent}'s, which a "
                "foreign key says its values are among: ")
    return None, (f"pg_stats holds neither common values nor a histogram for {column} (its table empty or never "
                  "analysed on the source) and no foreign key says where its values come from")


def _unknown(n: int, var: str, column: str, type_: str, why: str) -> tuple[Param, gen.Drawn]:
    """A column's value with no statistics to draw it from: a value of its type (a number spread
    over a thousand, else BY_TYPE's), said so; CannotDraw for a type with none."""
    kind = gen.base_type(type_)
    if kind not in BY_TYPE:
        raise gen.CannotDraw(f"${n}: {why}, and its type ({type_}) has no value pgknee would choose for it")
    drawn, value = _of_type(var, kind, kind in gen.INTEGERS | gen.FLOATS)
    return Param(n, "typed", column, type_, f"{value}: {why}; a value of its type (ANALYZE the table on the source "
                                             "and capture again, or edit the script)"), drawn


def _of_type(var: str, kind: str, spread: bool) -> tuple[gen.Drawn, str]:
    """A value of a type BY_TYPE names, and how it is said: a number spread over 0..999 (so that it
    does not pick the same rows each time), else the type's constant."""
    if spread:
        return gen.Drawn((f"\\set {var} random(0, 999)",), f":{var}"), "0..999"
    return gen.Drawn((), BY_TYPE[kind]), BY_TYPE[kind]


# a value of its type for a parameter nothing ties to a column (a constant pg_stat_statements normalised, a
# value only computed with): its SQL, said in the script
BY_TYPE = {**dict.fromkeys(gen.INTEGERS | gen.FLOATS, "1"), "boolean": "true", "text": "'x'",
           "character varying": "'x'", "character": "'x'", "date": "current_date", "uuid": "gen_random_uuid()",
           "timestamp with time zone": "now()", "timestamp without time zone": "localtimestamp",
           "interval": "interval '0'", "json": "'{}'", "jsonb": "'{}'", "bytea": "''::bytea"}


def _untied(src: Source, query: str, n: int, use: sqlmap.ParamUse) -> bool:
    """Nothing ties `$n` to a column's values: not compared with one, or inside an expression whose
    column is of another type than the server infers for `$n` (`c_last = name_of($1)`)."""
    if use.kind == "unknown":
        return True
    if use.kind != "expression":
        return False
    types = param_types(src, query)
    _, st = first_column(src, use)
    return n in types and st is not None and gen.base_type(types[n]) != gen.base_type(st.type)


def _typed(src: Source, sid: str, query: str, n: int, use: sqlmap.ParamUse) -> tuple[Param, gen.Drawn]:
    """A parameter nothing ties to a column: a value of the type the server infers for it. A number
    inside an expression compared with a column (`c_last = name_of($1)`) picks rows: drawn from
    0..999, so that it does not pick the same ones each time; any other is 1 (a CASE's constant, a
    length: 999 in `substr(x, 1, $2)` overflowed a varchar(500))."""
    types = param_types(src, query)
    kind = gen.base_type(types.get(n, ""))  # '': the server could not infer it
    if kind not in BY_TYPE:
        raise gen.CannotDraw(f"${n} is not compared with a column or set into one, and its type "
                             f"({kind or 'unknown: the server could not prepare the statement'}) has no value "
                             "pgknee would choose for it")
    var = f"{sid}_p{n}"
    picks = use.kind == "expression" and kind in gen.INTEGERS | gen.FLOATS
    drawn, value = _of_type(var, kind, picks)
    why = (f"{value}: a value of its type ({kind}); nothing ties it to a column's values (a constant "
           "pg_stat_statements replaced, or a value computed with), so no statistics say more: edit the script")
    return Param(n, "typed", "", kind, why), drawn


def _unseen(var: str, n: int, use: sqlmap.ParamUse, rows_per_call: float) -> tuple[Param, gen.Drawn]:
    """A value no statistics hold: a LIMIT is the rows each call returned on average (a LIMIT the
    rows do not reach shows as fewer: the same rows come back), an OFFSET 0, an amount added to a
    column 1; each said in the script, to edit there."""
    if use.kind == "limit":
        value, why = str(max(1, round(rows_per_call))), (f"a LIMIT: the {rows_per_call:.1f} rows each call "
                                                          "returned, on average, as the application saw them")
    elif use.kind == "offset":
        value, why = "0", "an OFFSET is not in the statistics (edit the script)"
    else:
        value, why = DELTA_VALUE, f"an amount added to {use.column} is not in the statistics (edit the script)"
    return Param(n, use.kind, use.column, "", f"{value}: {why}"), gen.Drawn((f"\\set {var} {value}",), f":{var}")


