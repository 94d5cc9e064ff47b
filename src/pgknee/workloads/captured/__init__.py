"""A workload captured from the user's own database (`pgknee workload capture`), replayed on a
copy: the user's schema and data as they are (no install, no DDL), the capture's scripts at their
weights. Refused before the sweep: writes without --allow-writes, writes to a server with the
source's system identifier (the source itself, or a physical copy of it), a server that lacks a
captured table."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from pgknee.base.errors import UserError
from pgknee.model.results import CapturedStatement
from pgknee.plan import WorkloadSpec
from pgknee.workloads import queries
from pgknee.workloads.base import CheckResult, RunPgbench, ScriptSource, aggregate_int, read_script
from pgknee.workloads.captured.manifest import Manifest, load, per_transaction

FRESH_COUNTER = re.compile(r"^\\set (\w+_seq) :\1 \+ \d+$", re.MULTILINE)  # a fresh key's counter (writes.py)


def _highest(conn: psycopg.Connection[Any], column: str) -> int:
    """The highest value of schema.table.column on the target (0 when empty)."""
    schema, table, name = column.split(".", 2)
    q = sql.SQL(queries.text("captured_highest_key")).format(column=sql.Identifier(name),
                                                               table=sql.Identifier(schema, table))
    return aggregate_int(conn, q)


def _warn_unanalysed(conn: psycopg.Connection[Any], tables: list[str], say: Callable[[str], None]) -> None:
    """A copy restored by pg_restore has no planner statistics until it is analysed: its plans,
    and so the replay's time per statement, are not the source's (measured on the test application:
    the orders query's share of time went from 9% to 70-80%). pgknee does not run ANALYZE on tables
    it did not create: it says so."""
    missing = [t for t in tables if not (conn.execute(queries.text("captured_table_analysed"),
                                                      t.split(".", 1)).fetchone() or (0,))[0]]
    if missing:
        say(f"warning: the target has no planner statistics for {', '.join(missing)} (pg_dump carries none): its "
            "plans may not be the source's; run ANALYZE on them before replaying")


class Captured:
    name = "captured"

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.manifest: Manifest = load(spec.path)
        writes = self.manifest.writes()
        if writes and not spec.allow_writes:
            raise UserError(f"the captured workload writes (scripts {', '.join(writes)}: INSERT, UPDATE or DELETE)",
                            "replay it on a copy of the database with --allow-writes, or give those scripts "
                            f"weight 0 in {Path(spec.path) / 'workload.toml'}")
        self._sources = []
        for sc in self.manifest.scripts:
            if sc.weight <= 0:
                continue
            path = Path(spec.path) / sc.file
            text = read_script(path, str(path), "capture again, or fix the file")
            self._sources.append(ScriptSource(sc.name, sc.file, text, sc.weight))

    def install(self, conn: psycopg.Connection[Any], *, say: Callable[[str], None],
                run_pgbench: RunPgbench) -> dict[str, str]:
        m = self.manifest
        missing = [t for t in m.tables if conn.execute(
            queries.text("captured_table_exists"), t.split(".", 1)).fetchone() in (None, (None,))]
        if missing:
            raise UserError(f"the target lacks the captured tables {', '.join(missing)}",
                            "replay on a copy of the source database (pg_dump | pg_restore), or --dsn that database")
        if m.writes():
            self._refuse_the_source(conn)
        _warn_unanalysed(conn, m.tables, say)
        say(f"captured workload from {m.source} ({m.captured_at}): {len(self._sources)} scripts, "
            f"{'with writes (--allow-writes)' if m.writes() else 'reads only'}; pgknee leaves the schema as it is")
        return {"workload": "captured", "captured_from": m.source, "captured_at": m.captured_at,
                "scripts": ", ".join(f"{s.filename}@{s.weight}" for s in self._sources), **self._observed()}

    def _observed(self) -> dict[str, str]:
        """The application's figures the replay is checked against (analyze.holdcheck), as run facts
        (workload.observed.NAME)."""
        o = self.manifest.observed
        if o is None:
            return {}
        scripted = {x for sc in self.manifest.scripts if sc.weight > 0 for x in sc.statements}
        n_tx = o.transactions_per_s * o.window_s
        calls = sum(s.calls for s in self.manifest.statements if s.id in scripted)
        # per transaction, the scripted statements' calls alone: what a replay can run of them
        figures = {"hold_ms": o.hold_ms, "idle_share": o.idle_share, "transactions_per_s": o.transactions_per_s,
                   "statements_per_transaction": per_transaction(calls, n_tx),
                   "sessions_open_p99": o.sessions_open.p99, "sessions_busy_p99": o.sessions_busy.p99,
                   "think_ms": o.think_ms}
        return {f"observed.{k}": repr(float(v)) for k, v in figures.items() if v is not None}

    def _refuse_the_source(self, conn: psycopg.Connection[Any]) -> None:
        try:
            [(readable,)] = conn.execute(queries.text("captured_system_identifier")).fetchall()  # its one row
            target = str(readable)
        except psycopg.errors.InsufficientPrivilege:
            conn.rollback() if not conn.autocommit else None
            target = ""
        if not target or not self.manifest.system_identifier:
            raise UserError("pgknee cannot tell whether the target is the capture's source (pg_control_system() "
                            "was not readable), and the workload writes",
                            "grant pg_monitor to the roles that capture and replay, or drop the writes")
        if target == self.manifest.system_identifier:
            raise UserError("the target has the capture's source's system identifier (the source itself, or a "
                            "physical copy of it), and the workload writes",
                            "replay writes on a copy restored with pg_dump | pg_restore, or drop the writes")

    def sources(self) -> list[ScriptSource]:
        return list(self._sources)

    def defines(self, conn: psycopg.Connection[Any] | None = None, clients: int = 1) -> dict[str, str]:
        """Each fresh key's variables (writes.py): above the highest value the target holds now, read on
        `conn` (a read of the application's table, between pgbench's runs); without one (the scripts
        parsed, a dry run) from 1. pgbench gives every client its own counter, from 0."""
        from pgknee.workloads.captured.generators import CannotDraw
        from pgknee.workloads.captured.writes import fresh_defines  # (its capture's parser is not the replay's)

        out: dict[str, str] = {}
        for var, column, type_name in self._fresh():
            highest = 0 if conn is None else _highest(conn, column)
            try:
                out.update(fresh_defines(var, highest, type_name, clients))
            except CannotDraw as e:
                raise UserError(f"the replay cannot insert: {e}", f"replay on a copy with fewer rows in "
                                f"{column.rsplit('.', 1)[0]}, or give the script weight 0") from None
        return out

    def _fresh(self) -> list[tuple[str, str, str]]:
        """The fresh keys the weighted scripts use: (pgbench variable, schema.table.column, type)."""
        used = {m.group(1) for src in self._sources for m in FRESH_COUNTER.finditer(src.text)}
        return [(f"{s.id}_p{p.n}", p.column, p.type) for s in self.manifest.statements for p in s.params
                if p.use == "fresh" and f"{s.id}_p{p.n}_seq" in used]

    def table_sizes(self, conn: psycopg.Connection[Any]) -> dict[str, int]:
        return {}

    def check(self, conn: psycopg.Connection[Any]) -> CheckResult | None:
        return None

    def captured_rows(self) -> list[CapturedStatement]:
        """The replayed statements as captured, for the store (the resemblance check's reference);
        those of one parse tree as one row, `s01+s03`, their shares summed."""
        return [CapturedStatement("+".join(s.id for s in g), g[0].query, g[0].kind, sum(s.share_calls for s in g),
                                  sum(s.share_time for s in g)) for g in self.manifest.by_parse_tree()]

    def fingerprints(self) -> dict[str, str]:
        """Each replayed parse tree's fingerprint and the row it counts under (captured_rows)."""
        return {g[0].fingerprint: "+".join(s.id for s in g) for g in self.manifest.by_parse_tree() if g[0].fingerprint}
