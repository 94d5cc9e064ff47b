"""Idle sessions beside the workers (articles 003 and 004): N connections opened before a
step and held for its whole length, then closed. One asyncio event loop on one thread
holds them all (thousands of sockets, not thousands of threads or processes).

Three kinds:
- quiet: connected, then nothing;
- catalog: each lists information_schema's tables and views and reads one row from each
  (article 004's steps), which fills the backend's catalogue caches, then nothing;
- sleep: each runs SELECT pg_sleep(...) for the step (article 003), active but idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import threading
import time
from typing import Any

import psycopg
from psycopg import pq, sql

from pgknee.base.errors import TargetError, first_line
from pgknee.run import queries
from pgknee.targets.base import Endpoint

APP_NAME = "pgknee:idle"  # the samplers leave pgknee's own sessions out


class IdleHolder:
    def __init__(self, endpoint: Endpoint, count: int, kind: str, *, sleep_s: float, concurrency: int = 32,
                 timeout_s: float = 600.0) -> None:
        self.endpoint = endpoint
        self.count = count
        self.kind = kind
        self.sleep_s = sleep_s
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.conns: list[psycopg.AsyncConnection[Any]] = []
        self.backend_pids: list[int] = []
        self.open_seconds = 0.0
        self.catalog_queries = 0
        self._sleepers: list[asyncio.Task[Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ---- the caller's side (any thread) ----------------------------------------------------------
    def open(self) -> None:
        """Open every session, or none: on the first failure the ones opened are closed and
        the reason raised."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pgknee-idle", daemon=True)
        self._thread.start()
        t0 = time.monotonic()
        fut = asyncio.run_coroutine_threadsafe(self._open_all(), self._loop)
        try:
            fut.result(timeout=self.timeout_s)
        except BaseException as e:
            fut.cancel()
            opened = len(self.conns)
            self.close()
            if isinstance(e, TimeoutError | asyncio.TimeoutError):
                raise TargetError(f"opening {self.count} idle sessions took more than {self.timeout_s:.0f} s "
                                  f"({opened} opened)", "use fewer idle sessions") from None
            if isinstance(e, psycopg.Error):
                raise TargetError(f"could not open idle session {opened + 1} of {self.count}: "
                                  f"{first_line(e, last=True)}",
                                  "the server refused more sessions: lower idle= or raise max_connections") from None
            raise
        self.open_seconds = time.monotonic() - t0

    def alive(self) -> int:
        """How many sessions the server still holds. An idle client learns that its session
        was ended only when it reads, so each socket is looked at: an idle session's has
        nothing to read unless the server said goodbye (a FATAL message, then end of file).
        A sleeping one is alive while its pg_sleep still runs."""
        if self._loop is None:
            return 0
        return asyncio.run_coroutine_threadsafe(self._count_alive(), self._loop).result(timeout=60)

    async def _count_alive(self) -> int:
        if self._sleepers:
            return sum(1 for t in self._sleepers if not t.done())
        n = 0
        for c in self.conns:
            if c.closed or c.broken or c.pgconn.status != pq.ConnStatus.OK:
                continue
            readable, _, _ = select.select([c.pgconn.socket], [], [], 0)
            if not readable:
                n += 1
        return n

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close_all(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        with contextlib.suppress(Exception):
            loop.close()
        self._loop = self._thread = None

    # ---- on the loop -----------------------------------------------------------------------------
    async def _open_all(self) -> None:
        gate = asyncio.Semaphore(self.concurrency)
        kwargs = self.endpoint.kwargs(APP_NAME, timeout=30)

        async def one() -> None:
            async with gate:
                conn = await psycopg.AsyncConnection.connect(autocommit=True, **kwargs)
                self.conns.append(conn)
                self.backend_pids.append(conn.info.backend_pid)
                if self.kind == "catalog":
                    await self._touch_catalog(conn)

        results = await asyncio.gather(*(one() for _ in range(self.count)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        if self.kind == "sleep":
            for conn in self.conns:
                self._sleepers.append(asyncio.ensure_future(
                    conn.execute(queries.text("idle_sleep"), (self.sleep_s,))))
            await asyncio.sleep(0.2)  # let every query reach its server

    async def _touch_catalog(self, conn: psycopg.AsyncConnection[Any]) -> None:
        rows = await (await conn.execute(queries.text("idle_catalog"))).fetchall()
        for schema, table in rows:
            await conn.execute(sql.SQL(queries.text("idle_catalog_row")).format(sql.Identifier(schema),
                                                                               sql.Identifier(table)))
        self.catalog_queries += len(rows) + 1

    async def _close_all(self) -> None:
        """Sleeping sessions are cancelled first (a backend in pg_sleep would not notice its
        client leaving until the sleep ends), a few dozen cancel requests at a time, without
        blocking the loop; then every connection is closed."""
        if self._sleepers:
            gate = asyncio.Semaphore(self.concurrency)

            async def cancel(conn: psycopg.AsyncConnection[Any]) -> None:
                async with gate:
                    with contextlib.suppress(Exception):
                        await conn.cancel_safe(timeout=10.0)

            await asyncio.gather(*(cancel(c) for c in self.conns), return_exceptions=True)
            done, pending = await asyncio.wait(self._sleepers, timeout=30)
            for task in pending:  # a query the cancel did not reach: the close below ends it
                task.cancel()
            await asyncio.gather(*self._sleepers, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self.conns), return_exceptions=True)
        self.conns = []
        self._sleepers = []
