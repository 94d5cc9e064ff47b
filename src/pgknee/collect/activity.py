"""pg_stat_activity sampler: a thread with its own autocommit connection and a
prepared statement, sampling at ~10 Hz with jitter (fixed periods alias with
periodic work), leaving pgknee's own sessions out.

Memory stays bounded: rows are handed to a sink in batches while the step runs
(the run writes them to the store), the rest at the end of the step. A lost
connection (a DBA's pg_terminate_backend, an idle-session timeout, a restart)
is reconnected with backoff; the ticks missed meanwhile are counted and stored,
so a gap is seen rather than silently shrinking the sample.

With thousands of backends the query may take most of the interval: the sampler then
lengthens its interval for the rest of the step (collect.pace), says so through `on_slow`,
and the step records the interval it ended at and its late ticks."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgknee.base.clock import iso_of
from pgknee.base.errors import PgkneeError, first_line
from pgknee.collect import queries
from pgknee.collect.pace import Pace
from pgknee.collect.protocol import SAMPLERS, Hooks, Phase, StepProcesses
from pgknee.collect.queries import load
from pgknee.model.samples import ActivitySamples, SessionRow, SnapshotRow
from pgknee.targets.base import Endpoint

ACTIVITY_COLUMNS = SessionRow._fields[2:]  # pg_stat_activity's, after the time and the phase

# the query's counts before each session's columns: backends, client backends, active, idle in
# transaction, hidden (rows this role may not see: counted, not stored)
COUNTS = 5

Sink = Callable[[int, list[SnapshotRow], list[SessionRow]], None]  # (step_id, snapshots, sessions)
BATCH_ROWS = 20_000  # session rows held before they go to the sink
BATCH_SECONDS = 5.0


@dataclass
class StepSamples:
    step_id: int
    snapshots: list[SnapshotRow] = field(default_factory=list)
    rows: list[SessionRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ticks_lost: int = 0  # ticks without a connection
    ticks_late: int = 0  # ticks that began late: the one before overran the interval
    reconnects: int = 0
    flushed_at: float = field(default_factory=time.monotonic)
    bench_pids: set[int] = field(default_factory=set)  # client backends seen in the bench phase


class ActivitySampler(Hooks):
    """pg_stat_activity, as collect.protocol's Collector: its record is the step's ActivitySamples;
    the benchmark's backends it finds in the bench phase go to the step's processes as it goes."""

    name = "activity"
    order = SAMPLERS

    def __init__(self, endpoint: Endpoint, server_version_num: int, interval_s: float, *,
                 jitter: float = 0.2, all_databases: bool = False, query_text: bool = True,
                 sink: Sink | None = None, on_slow: Callable[[str], None] | None = None) -> None:
        self.endpoint = endpoint
        self.query = load("activity", server_version_num)
        # the benchmark's database only unless asked; query texts unless asked not to keep them
        self.params = {"all_databases": all_databases, "query_text": query_text}
        self.pace = Pace(interval_s)
        self.jitter = jitter
        self.sink = sink
        self.on_slow = on_slow  # told when the sampler slows down (from its thread)
        self._said_s = interval_s  # the longest interval told so far: told again only when longer
        self.phase = "pre"
        self.queries_run = 0  # each one is a commit in the benchmark database
        self._lock = threading.Lock()
        self._current: StepSamples | None = None
        self._step: StepProcesses | None = None  # the step's processes, its backends filled in here
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        self._thread: threading.Thread | None = None
        self._retry_at = 0.0  # no connection: when to try again
        self._backoff = 0.1

    def _connect(self) -> None:
        conn = self.endpoint.connect("sampler")
        conn.execute(queries.text("sampler_session"))
        conn.execute(self.query, self.params, prepare=True)  # prepare once: planning costs more than running
        self.queries_run += 2
        self._conn = conn

    def reconnect(self) -> None:
        """After a server restart, between steps."""
        with self._lock:
            assert self._current is None, "reconnect between steps only"
        self._drop()
        self._connect()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    @property
    def backend_pid(self) -> int | None:
        """The server process of the sampler's connection (its cost on the server)."""
        conn = self._conn
        return conn.info.backend_pid if conn is not None and not conn.closed else None

    @property
    def thread_id(self) -> int | None:
        """The sampler thread's kernel id (its cost in pgknee: /proc/self/task/ID/stat)."""
        return self._thread.native_id if self._thread is not None else None

    def start(self) -> None:
        self._connect()
        self._thread = threading.Thread(target=self._loop, name="pgknee-activity", daemon=True)
        self._thread.start()

    def begin_step(self, step: StepProcesses) -> None:
        with self._lock:
            self._current, self._step = StepSamples(step.step_id), step
            self.phase = "pre"
            self.pace.reset()

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase

    def end_step(self) -> tuple[ActivitySamples, ...]:
        """What was not handed to the sink yet, and the step's gap counts."""
        with self._lock:
            cur, self._current = self._current, None
        if cur is None:
            return ()
        return (ActivitySamples(tuple(cur.snapshots), tuple(cur.rows), tuple(cur.errors), cur.ticks_lost,
                                cur.reconnects, self.pace.interval_s, cur.ticks_late),)

    @property
    def interval_s(self) -> float:
        """The interval the sampler runs at now."""
        return self.pace.interval_s

    def _loop(self) -> None:
        rng = random.Random()
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += self.pace.interval_s * (1 + rng.uniform(-self.jitter, self.jitter))
            if self._current is not None:
                self._tick()
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()  # fell behind: do not burst to catch up
                delay = 0
                with self._lock:
                    if self._current is not None:
                        self._current.ticks_late += 1
            self._stop.wait(delay)

    def _tick(self) -> None:
        if self._conn is None and not self._try_reconnect():
            with self._lock:
                if self._current is not None:
                    self._current.ticks_lost += 1
            return
        self._sample_once()
        self._maybe_flush()

    def _try_reconnect(self) -> bool:
        """Back off from 0.1 s to 2 s between attempts; count the reconnections."""
        now = time.monotonic()
        if now < self._retry_at:
            return False
        try:
            self._connect()
        except (PgkneeError, psycopg.Error):
            self._retry_at = now + self._backoff
            self._backoff = min(self._backoff * 2, 2.0)
            return False
        self._backoff = 0.1
        with self._lock:
            if self._current is not None:
                self._current.reconnects += 1
        return True

    def _sample_once(self) -> None:
        assert self._conn is not None
        phase, epoch = self.phase, time.time()
        t0 = time.perf_counter()
        try:
            rows = self._conn.execute(self.query, self.params, prepare=True).fetchall()
        except psycopg.Error as e:
            with self._lock:
                if self._current is not None:
                    self._current.errors.append(first_line(e))
                    self._current.ticks_lost += 1
            if self._conn.closed or self._conn.broken:
                self._drop()  # reconnected at the next tick
            return
        finally:
            self.queries_run += 1
        ms = (time.perf_counter() - t0) * 1000.0
        at = iso_of(epoch)
        with self._lock:
            cur = self._current
            if cur is None:
                return
            head = rows[0]
            backends, clients, active, idle_in_xact, hidden = head[:COUNTS]
            cur.snapshots.append(SnapshotRow(at, phase, epoch, backends, clients, active, idle_in_xact, hidden, ms))
            cur.rows.extend(SessionRow(at, phase, *r[COUNTS:]) for r in rows if r[COUNTS] is not None)
            if phase == "bench":  # (the rows may go to the sink before the step ends: kept apart)
                db = self.endpoint.params.get("dbname")  # r[COUNTS:]: pid, leader_pid, datid, datname, ...
                cur.bench_pids.update(int(r[COUNTS]) for r in rows if r[COUNTS] is not None
                                      and r[-1] == "client backend" and r[COUNTS + 3] == db)
                if self._step is not None:
                    self._step.backends = frozenset(cur.bench_pids)
            slowed = self.pace.observe(ms / 1000.0) is not None  # (begin_step resets it under the lock)
        if slowed:
            self._slowed(int(head[0]))

    def _slowed(self, backends: int) -> None:
        """Tell the run the first time the sampler goes this slow (each step starts fast again)."""
        new = self.pace.interval_s
        if new <= self._said_s or self.on_slow is None:
            return
        self._said_s = new
        with contextlib.suppress(Exception):  # whoever listens, the sampling goes on
            self.on_slow(f"pg_stat_activity sampling slowed to {1 / new:g} Hz (every {new * 1000:g} ms) for "
                         f"the rest of the step: its query took {self.pace.took_s * 1000:.0f} ms with {backends:,} "
                         "backends, more than half its interval; each step is sampled at the plan's rate "
                         "first, and the step's rate is stored")

    def _maybe_flush(self) -> None:
        """Hand what was sampled so far to the sink, when there is much of it or it has waited."""
        if self.sink is None:
            return
        with self._lock:
            cur = self._current
            if cur is None or (len(cur.rows) < BATCH_ROWS and time.monotonic() - cur.flushed_at < BATCH_SECONDS):
                return
            step_id, snaps, rows = cur.step_id, cur.snapshots, cur.rows
            cur.snapshots, cur.rows, cur.flushed_at = [], [], time.monotonic()
        try:
            self.sink(step_id, snaps, rows)
        except Exception as e:  # the store refused (full, locked): keep the rows for the step's own write
            with self._lock:
                if self._current is not None and self._current.step_id == step_id:
                    self._current.snapshots[:0], self._current.rows[:0] = snaps, rows
                    self._current.errors.append(f"rows kept in memory: the store refused them ({e})")
            self.sink = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._drop()
