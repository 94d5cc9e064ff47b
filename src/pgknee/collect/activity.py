"""pg_stat_activity sampler: a thread with its own autocommit connection and a
prepared statement, sampling at ~10 Hz with jitter (fixed periods alias with
periodic work), leaving pgknee's own sessions out. Rows are buffered in memory
and handed over at the end of each step (ActivitySamples), so the store is
written between steps, never while pgbench runs."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgknee.clock import iso_of
from pgknee.collect.queries import load
from pgknee.targets.base import Endpoint
from pgknee.types import ActivitySamples

ACTIVITY_COLUMNS = (
    "pid", "leader_pid", "datid", "datname", "usesysid", "usename", "application_name", "client_addr",
    "client_hostname", "client_port", "backend_start", "xact_start", "query_start", "state_change",
    "wait_event_type", "wait_event", "state", "backend_xid", "backend_xmin", "query_id", "query", "backend_type",
)


@dataclass
class StepSamples:
    step_id: int
    snapshots: list[tuple[Any, ...]] = field(default_factory=list)  # (at, phase, epoch, counts..., ms)
    rows: list[tuple[Any, ...]] = field(default_factory=list)  # (at, phase, *ACTIVITY_COLUMNS)
    errors: list[str] = field(default_factory=list)


class ActivitySampler:
    def __init__(self, endpoint: Endpoint, server_version_num: int, interval_s: float, *,
                 jitter: float = 0.2, all_databases: bool = False, query_text: bool = True) -> None:
        self.endpoint = endpoint
        self.query = load("activity", server_version_num)
        # the benchmark's database only unless asked; query texts unless asked not to keep them
        self.params = {"all_databases": all_databases, "query_text": query_text}
        self.interval_s = interval_s
        self.jitter = jitter
        self.phase = "pre"
        self.queries_run = 0  # each one is a commit in the benchmark database
        self._lock = threading.Lock()
        self._current: StepSamples | None = None
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        self._thread: threading.Thread | None = None

    def _connect(self) -> None:
        self._conn = self.endpoint.connect("sampler")
        self._conn.execute("SET statement_timeout = '2s'")
        self._conn.execute(self.query, self.params, prepare=True)  # prepare once: planning costs more than running
        self.queries_run += 2

    def reconnect(self) -> None:
        """After a server restart, between steps (the thread samples only inside a step)."""
        with self._lock:
            assert self._current is None, "reconnect between steps only"
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
        self._connect()

    def start(self) -> None:
        self._connect()
        self._thread = threading.Thread(target=self._loop, name="pgknee-activity", daemon=True)
        self._thread.start()

    def begin_step(self, step_id: int) -> None:
        with self._lock:
            self._current = StepSamples(step_id)
            self.phase = "pre"

    def end_step(self) -> ActivitySamples | None:
        with self._lock:
            cur, self._current = self._current, None
        if cur is None:
            return None
        return ActivitySamples(tuple(cur.snapshots), tuple(cur.rows), tuple(cur.errors))

    def _loop(self) -> None:
        assert self._conn is not None
        rng = random.Random()
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += self.interval_s * (1 + rng.uniform(-self.jitter, self.jitter))
            if self._current is not None:
                self._sample_once()
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()  # fell behind: do not burst to catch up
                delay = 0
            self._stop.wait(delay)

    def _sample_once(self) -> None:
        assert self._conn is not None
        phase, epoch = self.phase, time.time()
        t0 = time.perf_counter()
        try:
            rows = self._conn.execute(self.query, self.params, prepare=True).fetchall()
        except psycopg.Error as e:
            with self._lock:
                if self._current is not None:
                    self._current.errors.append(str(e).strip().splitlines()[0])
            if self._conn.closed or self._conn.broken:
                self._stop.set()
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
            cur.snapshots.append((at, phase, epoch, head[0], head[1], head[2], head[3], ms))
            cur.rows.extend((at, phase, *r[4:]) for r in rows if r[4] is not None)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
