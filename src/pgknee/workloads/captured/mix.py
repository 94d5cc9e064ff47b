"""What a step replayed of each captured statement: pg_stat_statements on the target read as the
bench phase begins and as the step ends, the difference per statement (found by its parse tree's
fingerprint: the queryid differs between clusters, as it hashes relation OIDs). The target's
statistics are never reset: they may be someone else's, and a difference measures the same.

A collector (collect.protocol) of a captured workload's run, added before the server's counters:
its first read comes before pg_stat_database's and its last after, so neither is in the window
that counts the benchmark's commits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from pgknee.base.errors import Interrupted, PgkneeError, first_line
from pgknee.collect.protocol import FIRST, Hooks, Phase, StepProcesses
from pgknee.model.server import StatementsStep
from pgknee.workloads import queries
from pgknee.workloads.captured.sqlmap import statement_fingerprint

UNREADABLE = (psycopg.errors.UndefinedTable, psycopg.errors.ObjectNotInPrerequisiteState,
              psycopg.errors.InsufficientPrivilege)


class StatementMix(Hooks):
    name = "statement_mix"
    order = FIRST  # its first read before pg_stat_database's, its last after
    queries_run = 0  # its reads on a connection of their own, outside pg_stat_database's window

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], fingerprints: dict[str, str],
                 say: Callable[[str], None]) -> None:
        self.connect, self.ids, self.say = connect, fingerprints, say
        self.known: dict[str, str] = {}  # query text -> fingerprint
        self.before: dict[str, tuple[int, float]] | None = None
        self.off = False

    def _read(self) -> dict[str, tuple[int, float]] | None:
        if self.off:
            return None
        try:
            with self.connect() as conn:
                rows = conn.execute(queries.text("captured_mix")).fetchall()
        except Interrupted:
            raise
        except UNREADABLE as e:
            self.off = True  # for the rest of the run: said once
            self.say(f"the replay's statement mix is not measured: pg_stat_statements cannot be read on the "
                     f"target ({first_line(e)}); load it there to compare with the capture")
            return None
        except (psycopg.Error, PgkneeError):
            return None  # the server went away: the step finds out and says so; this step's mix is unknown
        out: dict[str, tuple[int, float]] = {}
        for query, calls, total in rows:
            fp = self.known.setdefault(query, statement_fingerprint(query))
            sid = self.ids.get(fp)
            if sid is not None:
                c, t = out.get(sid, (0, 0.0))
                out[sid] = (c + int(calls), t + float(total))
        return out

    def available(self) -> str | None:
        try:
            with self.connect() as conn:
                conn.execute(queries.text("captured_mix")).fetchall()
        except UNREADABLE as e:
            return f"pg_stat_statements cannot be read on the target ({first_line(e)})"
        return None

    def begin_step(self, step: StepProcesses) -> None:
        self.before = None

    def set_phase(self, phase: Phase) -> None:
        if phase == "bench":
            self.before = self._read()

    def end_step(self) -> tuple[StatementsStep, ...]:
        """The step's (statement, calls, total_ms), when both reads worked."""
        after, before = self._read(), self.before
        self.before = None
        if after is None or before is None:
            return ()
        return (StatementsStep(tuple((sid, c - before.get(sid, (0, 0.0))[0], round(t - before.get(sid, (0, 0.0))[1], 3))
                                     for sid, (c, t) in sorted(after.items()) if c > before.get(sid, (0, 0.0))[0])),)
