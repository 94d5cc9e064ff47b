"""The pooler's own view, from the pgbouncer admin console: SHOW POOLS sampled
through the step (clients active and waiting, server connections active and idle,
the longest wait), and SHOW STATS totals read at the start and end of the bench
phase, whose deltas give transactions, transaction time, query time and the time
clients waited for a server. The avg_* columns refresh only every stats_period,
so they are never used. Columns are read by name: they change between versions. The console
client (admin_connect, show) lives here too: pgbouncer's management uses it to know when a
pgbouncer it started answers."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import psycopg

from pgknee.base.clock import polling
from pgknee.base.errors import Interrupted, PgkneeError, PoolerError, first_line
from pgknee.collect.osproc import CLK_TCK, process_cpu_ticks, process_runq_wait_ns
from pgknee.collect.protocol import STEP_OWN, Hooks, Phase
from pgknee.model.samples import PoolerFacts, PoolerProcessSample, PoolerSample, PoolerSamples
from pgknee.targets.base import Endpoint


def admin_connect(endpoint: Endpoint, timeout: float = 5.0) -> psycopg.Connection[Any]:
    """The admin console: autocommit (it knows no BEGIN), simple queries only (psycopg
    sends parameterless queries that way, and never prepares them here)."""
    try:
        conn = psycopg.connect(autocommit=True, **endpoint.kwargs("pgknee:console", timeout=max(1.0, timeout)))
    except psycopg.OperationalError as e:
        raise PoolerError(f"cannot reach the pgbouncer console at {endpoint.label}: "
                          f"{first_line(e, last=True) if str(e).strip() else 'connection failed'}",
                          "check the admin DSN: the user must be in admin_users or stats_users") from None
    # psycopg prepares a query run 5 times; the console speaks the simple protocol only
    conn.prepare_threshold = None
    return conn


def show(conn: psycopg.Connection[Any], what: str) -> list[dict[str, Any]]:
    """SHOW POOLS / STATS / ... as dicts by column name (columns differ between versions)."""
    cur = conn.execute(f"SHOW {what}")
    names = [d.name for d in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


POOL_COLUMNS = PoolerSample._fields[2:]  # SHOW POOLS' counts, after the phase and the epoch
STATS_TOTALS = ("total_xact_count", "total_query_count", "total_xact_time", "total_query_time",
                "total_wait_time", "total_received", "total_sent")


def pool_counts(rows: list[dict[str, Any]], database: str) -> tuple[int, ...]:
    """One database's pools (all users) summed; maxwait as the largest, in microseconds."""
    mine = [r for r in rows if r.get("database") == database]
    out = []
    for col in POOL_COLUMNS[:-1]:
        out.append(sum(int(r.get(col) or 0) for r in mine))
    out.append(max((int(r.get("maxwait") or 0) * 1_000_000 + int(r.get("maxwait_us") or 0) for r in mine),
                   default=0))
    return tuple(out)


def stats_totals(rows: list[dict[str, Any]], database: str) -> dict[str, float]:
    for r in rows:
        if r.get("database") == database:
            return {k: float(v) for k, v in r.items() if k in STATS_TOTALS and isinstance(v, int | float | Decimal)}
    return {}


def close_servers(admins: Sequence[Endpoint], database: str, timeout_s: float = 3.0) -> bool:
    """RECONNECT the database's pools: pgbouncer closes their server connections once released
    (between phases all are), so their backends exit and report what they did to
    pg_stat_database at once, not after idling up to 10 s into the next phase; True once none is
    left in any process. `database` is pgknee's own name for the pool, never a value from outside."""
    return all([_close_servers(admin, database, timeout_s) for admin in admins])  # every one, not up to a failure


def _close_servers(admin: Endpoint, database: str, timeout_s: float) -> bool:
    with admin_connect(admin) as c:
        c.execute(f"RECONNECT {database}")
        for _ in polling(timeout_s, 0.05):
            counts = dict(zip(POOL_COLUMNS, pool_counts(show(c, "POOLS"), database), strict=True))
            if not any(counts[k] for k in ("sv_active", "sv_idle", "sv_used", "sv_login")):
                return True
    return False


def summed(per_process: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The processes' SHOW POOLS counts as one pooler's: summed, maxwait the largest."""
    if not per_process:
        return (0,) * len(POOL_COLUMNS)
    cols = list(zip(*per_process, strict=True))
    return (*(sum(c) for c in cols[:-1]), max(cols[-1]))


NO_FACTS = PoolerFacts()


class PoolerSampler(Hooks):
    """A thread sampling SHOW POOLS for one database while a step runs, on each of the pooler's
    consoles (one per process), and each process's CPU (user and system) from /proc when pgknee
    started it: collect.protocol's Collector, started with the step's pooler and joined to the
    run's collectors for the step; its records are the step's PoolerSamples (the processes' counts
    summed, and each process's own) and its PoolerFacts: how the pooler ran (`facts`, as its lab
    started it) with the change of its SHOW STATS totals over the bench phase, read as the bench
    and post phases begin, or why there is none."""

    name = "pooler"
    order = STEP_OWN  # joined for the step, after the run's own
    queries_run = 0  # the pooler's console, not the benchmark database

    def __init__(self, admins: Sequence[Endpoint], database: str, interval_s: float,
                 pids: Sequence[int] = (), facts: PoolerFacts = NO_FACTS) -> None:
        self.admins = list(admins)  # a console each process (an external pooler's one)
        self.facts = facts
        self._stats_at: dict[str, list[dict[str, float]] | None] = {}  # SHOW STATS as the bench, the post begin
        self.pids = tuple(pids)  # in the consoles' order: pgknee's own processes
        self.database = database
        self.interval_s = interval_s
        self.phase = "pre"
        self.errors: list[str] = []
        self._rows: list[PoolerSample] = []
        self._procs: list[PoolerProcessSample] = []
        self._ticks: list[tuple[float, int, int, int] | None] = [None] * len(self.pids)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: list[psycopg.Connection[Any]] = []
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            for admin in self.admins:
                self._conns.append(admin_connect(admin))
        except PoolerError:
            self.close()
            raise
        self._thread = threading.Thread(target=self._loop, name="pgknee-pooler", daemon=True)
        self._thread.start()

    def totals(self) -> dict[str, float]:
        """SHOW STATS totals of the database now, the processes' summed."""
        out: dict[str, float] = {}
        for one in self.totals_each():
            for k, v in one.items():
                out[k] = out.get(k, 0.0) + v
        return out

    def totals_each(self) -> list[dict[str, float]]:
        """SHOW STATS totals of the database now, per process, each on a connection of its own."""
        out = []
        for admin in self.admins:
            with admin_connect(admin) as c:
                out.append(stats_totals(show(c, "STATS"), self.database))
        return out

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += self.interval_s
            self._sample_once()
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _sample_once(self) -> None:
        if not self._conns:
            return
        try:
            now = time.time()
            counts = [pool_counts(show(c, "POOLS"), self.database) for c in self._conns]
        except psycopg.Error as e:
            with self._lock:
                if len(self.errors) < 5:
                    self.errors.append(first_line(e))
            self._stop.set()  # the pooler (or one of its processes) is gone: the step will say why
            return
        procs = self._process_rows(now, counts)
        with self._lock:
            self._rows.append(PoolerSample(self.phase, now, *summed(counts)))
            self._procs.extend(procs)

    def _process_rows(self, now: float, counts: list[tuple[int, ...]]) -> list[PoolerProcessSample]:
        """Each of pgknee's processes: its CPU since the sample before and its own counts."""
        out = []
        for i, pid in enumerate(self.pids):
            ticks, wait = process_cpu_ticks(pid), process_runq_wait_ns(pid)
            prev, self._ticks[i] = self._ticks[i], (now, *ticks, wait) if ticks and wait is not None else None
            user = system = waited = None
            if ticks and wait is not None and prev and now > prev[0]:
                dt = now - prev[0]
                user, system = (100.0 * (ticks[0] - prev[1]) / CLK_TCK / dt,
                                100.0 * (ticks[1] - prev[2]) / CLK_TCK / dt)
                waited = 100.0 * (wait - prev[3]) / 1e9 / dt
            c = dict(zip(POOL_COLUMNS, counts[i], strict=True)) if i < len(counts) else {}
            out.append(PoolerProcessSample(self.phase, now, i + 1, pid, user, system, waited,
                                        c.get("cl_active"), c.get("cl_waiting"), c.get("sv_active"), c.get("sv_idle")))
        return out

    def set_phase(self, phase: Phase) -> None:
        if phase in ("bench", "post"):
            self._stats_at[phase] = self._totals_now()
        self.phase = phase

    def _totals_now(self) -> list[dict[str, float]] | None:
        try:
            return self.totals_each()
        except Interrupted:  # a stop signal, raised here by its handler: never taken for a pooler fault
            raise
        except (PgkneeError, psycopg.Error):
            return None

    def end_step(self) -> tuple[PoolerSamples, PoolerFacts]:
        """Sampling stops; what it sampled, why it stopped early if it did (it lives for one step),
        and how the pooler ran with its SHOW STATS deltas."""
        self._halt()
        with self._lock:
            rows, self._rows = self._rows, []
            procs, self._procs = self._procs, []
            errors = tuple(self.errors)
        return PoolerSamples(tuple(rows), errors, tuple(procs)), self._ran(errors)

    def _ran(self, errors: tuple[str, ...]) -> PoolerFacts:
        before, after = self._stats_at.get("bench"), self._stats_at.get("post")
        facts = dataclasses.replace(self.facts, sampler_errors=" | ".join(errors) or None)
        if before is None or after is None or len(before) != len(after) or not after:
            return dataclasses.replace(facts, missing="the console did not answer at the end of the step")
        each = [{k: a[k] - b.get(k, 0.0) for k in a} for b, a in zip(before, after, strict=True)]
        summed = {k: sum(d.get(k, 0.0) for d in each) for k in each[0]}
        return dataclasses.replace(facts, deltas=tuple(summed.items()), per_process=tuple(
            (i, k, x) for i, d in enumerate(each, 1) for k, x in d.items()) if len(each) > 1 else ())

    def _halt(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def close(self) -> None:
        self._halt()
        for c in self._conns:
            with contextlib.suppress(psycopg.Error):
                c.close()


class FunctionSampler(PoolerSampler):
    """A pooler without a pgbouncer console (pgpool-II): `read` gives SHOW POOLS' counts
    (POOL_COLUMNS) and `totals` what grows, each as the pooler's own module reads them. A read
    that fails outside the bench phase (the pooler started again after the warm-up) is skipped."""

    def __init__(self, read: Callable[[], tuple[int, ...]], totals: Callable[[], dict[str, float]],
                 interval_s: float, facts: PoolerFacts = NO_FACTS) -> None:
        super().__init__([], "", interval_s, facts=facts)
        self._read, self._totals = read, totals

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="pgknee-pooler", daemon=True)
        self._thread.start()

    def totals_each(self) -> list[dict[str, float]]:
        return [self._totals()]

    def _sample_once(self) -> None:
        try:
            now = time.time()
            counts = self._read()
        except (psycopg.Error, PoolerError) as e:
            if self.phase != "bench":
                return
            with self._lock:
                if len(self.errors) < 5:
                    self.errors.append(first_line(e) if isinstance(e, psycopg.Error) else e.message)
            self._stop.set()
            return
        with self._lock:
            self._rows.append(PoolerSample(self.phase, now, *counts))
