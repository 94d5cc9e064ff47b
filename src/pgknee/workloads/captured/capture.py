"""`pgknee workload capture`: the source database's own workload, read from pg_stat_statements
(statements, calls, time, rows) and pg_stats (each parameter's column: common values, their
frequencies, histogram bounds), in one read-only transaction. Nothing is written to the source;
no data is read but what those two views show."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.dsn import redact_dsn
from pgknee.errors import TargetError, UserError, first_line
from pgknee.targets.base import Endpoint
from pgknee.workloads import queries
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import grouping, observe, sqlmap
from pgknee.workloads.captured import transactions as tx
from pgknee.workloads.captured.manifest import Manifest, Param, ScriptEntry, Skipped, Statement

ORDERS = {"time": "total_exec_time", "calls": "calls"}
MAX_WEIGHT = 10_000  # the most frequent script's weight; the others in proportion (at least 1)
LIMIT_VALUE = "10"  # a LIMIT's value is not in the statistics: this one, to edit in the script
DELTA_VALUE = "1"  # an amount added to a column: its distribution is not in the statistics either
SYSTEM = ("pg_catalog", "information_schema")


@dataclass
class _Source:
    conn: psycopg.Connection[Any]
    tables: dict[str, str | None]  # as written -> schema.table, None: not visible
    stats: dict[tuple[str, str], gen.ColumnStats | None]
    sequences: set[str] = dataclasses.field(default_factory=set)  # schema.name of the sequences read as relations


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
            src = _Source(conn, {}, {})
            manifest, texts = _build(src, entries, top, order_by)
            database = str(_one(conn, queries.text("captured_current_database")))
            sysid = _system_identifier(conn)
    except psycopg.Error as e:
        raise TargetError(f"reading the workload from {endpoint.label} failed: {first_line(e)}") from None
    finally:
        conn.close()
    if watched is not None:
        manifest = _transactions(manifest, texts, watched)
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
    row = conn.execute(sql).fetchone()
    return row[0] if row else None


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


def _observed_entries(w: observe.Watched, order_by: str) -> list[tuple[str, int, float, int]]:
    """The statements' change over the window, ordered as pg_stat_statements' totals would be."""
    rows = [(s.query, s.calls, s.total_ms, s.rows) for s in w.statements]
    if order_by == "calls":
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def _transactions(manifest: dict[str, Any], texts: dict[str, str], w: observe.Watched) -> dict[str, Any]:
    """The observation into the manifest; the statements grouped into the application's
    transactions, each a script that holds its transaction open as the application did."""
    statements: list[Statement] = manifest["statements"]
    by_text = {s.query: s.queryid for s in w.statements}
    queryids = {by_text[s.query]: s.id for s in statements if s.query in by_text}
    groups, how = grouping.group({s.id: s.calls for s in statements}, queryids, w.transactions, w.begins)
    obs = w.observation
    explicit = [(t.idle_s, wt) for t, wt in tx.weights(w.transactions, obs.interval_s) if t.explicit]
    points = grouping.idle_points(explicit, obs.explicit_idle_mean_ms)
    in_group: dict[str, int] = {}
    scripts: list[tuple[ScriptEntry, int]] = []
    for i, g in enumerate(groups, 1):
        name = f"t{i:02d}"
        texts[f"{name}.sql"] = _transaction_text(name, g, [texts[f"{sid}.sql"] for sid in g.statements], points)
        scripts.append((ScriptEntry(name, f"{name}.sql", 0, list(g.statements), g.evidence, points), g.transactions))
        for sid in g.statements:
            in_group[sid] = in_group.get(sid, 0) + g.transactions
    for s in statements:  # what a statement ran outside its transaction, in autocommit
        rest = s.calls - in_group.get(s.id, 0)
        if rest > grouping.CALLS_MATCH * s.calls:
            scripts.append((ScriptEntry(s.id, f"{s.id}.sql", 0, [s.id]), rest))
    top = max((n for _, n in scripts), default=1)
    manifest["scripts"] = [dataclasses.replace(sc, weight=max(1, round(n * MAX_WEIGHT / top))) for sc, n in scripts]
    manifest["observed"], manifest["grouping"] = obs, how
    return manifest


def _transaction_text(name: str, g: grouping.Group, parts: list[str], points: list[float]) -> str:
    """One transaction's script: every statement's pgbench variables, then BEGIN, the statements with the
    application's idle time split between them, COMMIT."""
    split = [_pieces(p) for p in parts]
    sets = [m for metas, _ in split for m in metas]
    sql = [q for _, q in split]
    gaps = max(1, len(sql) - 1)
    body: list[str] = ["BEGIN;"]
    for i, line in enumerate(sql):
        if len(sql) == 1 and points:
            body.append("\\sleep :pgknee_gap_us us")
        body.append(line)
        if i < len(sql) - 1 and points:
            body.append("\\sleep :pgknee_gap_us us")
    body.append("COMMIT;")
    mean = grouping.mean_of(points)
    head = [f"-- pgknee captured transaction {name}: {', '.join(g.statements)} in one transaction ({g.evidence})",
            f"-- idle inside it, drawn per transaction: about {mean:.1f} ms (p50 {points[5]:.1f}, p90 "
            f"{points[9]:.1f}, p99 {points[10]:.1f}), split over {gaps} sleep(s)" if points else
            "-- no idle time inside it was observed"]
    return "\n".join([*head, *sets, *(grouping.sleep_lines(points, gaps) if points else []), *body, ""])


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


def _entries(conn: psycopg.Connection[Any], version: int, order_by: str) -> list[tuple[str, int, float, int]]:
    sql = queries.load("captured_entries", version)  # _check_statements refused a server before 14
    rows = [(str(q), int(c), float(t), int(r)) for q, c, t, r in conn.execute(sql).fetchall()]
    if order_by == "calls":
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def _system_identifier(conn: psycopg.Connection[Any]) -> str:
    try:
        with conn.transaction():
            return str(_one(conn, queries.text("captured_system_identifier")))
    except psycopg.errors.InsufficientPrivilege:
        return ""


def _build(src: _Source, entries: list[tuple[str, int, float, int]], top: int,
           order_by: str) -> tuple[dict[str, Any], dict[str, str]]:
    calls_all = sum(e[1] for e in entries) or 1
    time_all = sum(e[2] for e in entries) or 1.0
    statements: list[Statement] = []
    skipped: list[Skipped] = []
    texts: dict[str, str] = {}
    for query, calls, total, rows in entries[:top]:
        sid = f"s{len(statements) + 1:02d}"
        try:
            st, text = _statement(src, sid, query, (calls, total, rows), (calls_all, time_all))
        except gen.CannotDraw as e:
            skipped.append(Skipped(_shown(query), calls, str(e)))
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


def _statement(src: _Source, sid: str, query: str, figures: tuple[int, float, int],
               totals: tuple[int, float]) -> tuple[Statement, str]:
    calls, total, rows = figures
    if query == "<insufficient privilege>":
        raise gen.CannotDraw("its text is hidden from this role (GRANT pg_read_all_stats)")
    parsed = sqlmap.parse(query)
    if parsed.kind == "transaction":
        raise gen.CannotDraw("transaction control: each script runs in autocommit unless the manifest groups "
                             "statements (see BEGIN's calls against the statements')")
    if parsed.kind == "skip":
        raise gen.CannotDraw(parsed.reason)
    tables = [_table(src, s, t) for s, t in parsed.tables]
    if not tables or all(t.split(".")[0] in SYSTEM for t in tables):
        raise gen.CannotDraw("it reads no table of the application (only the catalogues, or none)")
    if all(t in src.sequences or t.split(".")[0] in SYSTEM for t in tables):
        # pg_dump before 18 reads each sequence so (SELECT last_value, is_called FROM s), once per dump
        raise gen.CannotDraw(f"it reads the state of sequence {', '.join(t for t in tables if t in src.sequences)} "
                             "as a relation, as pg_dump and monitoring tools do (an application calls nextval())")
    params: list[Param] = []
    lines: list[str] = []
    placeholders: dict[int, str] = {}
    for n in sorted(parsed.params):
        p, drawn = _param(src, sid, n, parsed.params[n])
        params.append(p)
        lines += drawn.lines
        placeholders[n] = drawn.placeholder
    sql = re.sub(r"\$(\d+)(?!\d)", lambda m: placeholders.get(int(m.group(1)), m.group(0)), query)
    replayed = re.sub(r":s\d+_p\d+", "$1", sql)
    st = Statement(sid, query, parsed.kind, calls, round(total, 3), round(total / max(calls, 1), 4), rows,
                   round(calls / totals[0], 6), round(total / totals[1], 6), tables,
                   sqlmap.statement_fingerprint(replayed), params)
    head = [f"-- pgknee captured statement {sid}: {calls} calls, {st.mean_ms:.3f} ms mean, "
            f"{rows / max(calls, 1):.1f} rows per call, {st.share_time:.1%} of the database's time"]
    head += [f"-- ${p.n}: {p.column or p.use} ({p.type or '-'}): {p.drawn}" for p in params]
    return st, "\n".join([*head, *lines, sql.rstrip().rstrip(";") + ";", ""])


def _table(src: _Source, schema: str, name: str) -> str:
    written = f"{schema}.{name}" if schema else name
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


def _param(src: _Source, sid: str, n: int, use: sqlmap.ParamUse) -> tuple[Param, gen.Drawn]:
    var = f"{sid}_p{n}"
    if use.kind in ("limit", "delta"):
        value = LIMIT_VALUE if use.kind == "limit" else DELTA_VALUE
        why = "a LIMIT" if use.kind == "limit" else f"an amount added to {use.column}"
        return (Param(n, use.kind, use.column, "", f"{value}: {why} is not in the statistics (edit the script)"),
                gen.Drawn((f"\\set {var} {value}",), f":{var}"))
    if use.kind != "column":
        raise gen.CannotDraw(f"${n} is not compared with a column, set into one or a LIMIT: pgknee cannot "
                             "tell its values")
    for t in use.tables:
        table = _table(src, *(t.split(".", 1) if "." in t else ("", t)))
        st = _stats(src, table, use.column)
        if st is None:
            continue
        try:
            drawn = gen.draw(var, st)
        except gen.CannotDraw as e:
            raise gen.CannotDraw(f"${n} ({table}.{use.column}): {e}") from None
        how = (f"{len(st.mcv)} common values ({sum(st.mcf):.0%} of rows), then "
               f"{max(0, len(st.histogram) - 1)} histogram buckets")
        return Param(n, "column", f"{table}.{use.column}", st.type, how, list(st.mcv[:10]),
                     [round(f, 5) for f in st.mcf[:10]]), drawn
    raise gen.CannotDraw(f"${n}: column {use.column} not found in {', '.join(use.tables)}")


def _stats(src: _Source, table: str, column: str) -> gen.ColumnStats | None:
    key = (table, column)
    if key not in src.stats:
        schema, name = table.split(".", 1)
        row = src.conn.execute(queries.text("captured_column_stats"), {
            "schema": schema, "table": name, "qualified": f'"{schema}"."{name}"', "column": column}).fetchone()
        src.stats[key] = None if row is None else gen.ColumnStats(
            str(row[0]), float(row[1] or 0), float(row[2] or 0), tuple(row[3] or ()), tuple(row[4] or ()),
            tuple(row[5] or ()))
    return src.stats[key]
