"""The server's side of a step, through the collector protocol (collect.protocol): pg_stat_wal,
the checkpoint counters (pg_stat_bgwriter up to 16, pg_stat_checkpointer from 17) and pg_stat_io
(16+), each read when the bench phase begins and again once its statistics settled; the
difference is the step's. A counter reset between the two reads (pg_stat_reset_shared, a restart)
gives no record rather than a negative one. Every statement is in collect/queries, chosen by the
server's version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgknee.collect.counters import BenchCounters
from pgknee.collect.kcache import KcacheCollector
from pgknee.collect.pgstats import DatabaseCollector
from pgknee.collect.protocol import Collector, Needs, Session
from pgknee.collect.queries import load
from pgknee.model.kinds import StepRecord
from pgknee.model.server import CheckpointStep, IoStep, ServerRecord, WalStep, from_row

Row = dict[str, Any]


def _rows(conn: psycopg.Connection[Any], name: str, version_num: int) -> list[Row]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(load(name, version_num)).fetchall()


def _grew(before: Row, after: Row, counters: Sequence[str]) -> bool:
    """No counter went back (a reset in between makes the difference meaningless)."""
    return all((after[k] or 0) >= (before[k] or 0) for k in counters)


def _d(before: Row, after: Row, key: str) -> float | None:
    if after.get(key) is None or before.get(key) is None:
        return None
    return float(after[key]) - float(before[key])


def _n(before: Row, after: Row, key: str) -> int | None:
    d = _d(before, after, key)
    return None if d is None else int(d)


class _OneRowCollector(BenchCounters[Row]):
    """A view read as one row at each end of the phase (its statement in collect/queries as QUERY);
    `record` makes the phase's record of the two rows, once no COUNTERS went back."""

    QUERY = ""
    COUNTERS: tuple[str, ...] = ()

    def __init__(self, session: Session, version_num: int) -> None:
        super().__init__(session)
        self.version_num = version_num

    def read(self, conn: psycopg.Connection[Any]) -> Row:
        self.queries_run += 1
        return _rows(conn, self.QUERY, self.version_num)[0]

    def difference(self, before: Row, after: Row) -> tuple[StepRecord, ...]:
        return (self.record(before, after),) if _grew(before, after, self.COUNTERS) else ()

    def record(self, before: Row, after: Row) -> ServerRecord:
        raise NotImplementedError


class WalCollector(_OneRowCollector):
    """pg_stat_wal: records, full-page images, bytes, wal_buffers full; writes and syncs."""

    name = "pg_stat_wal"
    needs = Needs(since=140000, lacking="has no pg_stat_wal (14+)")
    QUERY = "wal"
    COUNTERS = ("records", "fpi", "bytes", "buffers_full")

    def record(self, before: Row, after: Row) -> ServerRecord:
        return WalStep(records=_n(before, after, "records") or 0, fpi=_n(before, after, "fpi") or 0,
                       bytes=_d(before, after, "bytes") or 0.0, buffers_full=_n(before, after, "buffers_full") or 0,
                       writes=_n(before, after, "writes"), syncs=_n(before, after, "syncs"),
                       write_ms=_d(before, after, "write_ms"), sync_ms=_d(before, after, "sync_ms"))


class CheckpointCollector(_OneRowCollector):
    """Checkpoints ended during the phase, their buffers and times; whether one was running as the
    phase began and as it ended (the checkpointer's wait event: shown with pg_read_all_stats)."""

    name = "checkpoints"
    needs = Needs(since=120000, lacking="is not supported")
    QUERY = "checkpoints"
    COUNTERS = ("timed", "requested", "buffers_written")

    def record(self, before: Row, after: Row) -> ServerRecord:
        return CheckpointStep(source=str(after["source"]), timed=_n(before, after, "timed") or 0,
                              requested=_n(before, after, "requested") or 0, done=_n(before, after, "done"),
                              buffers_written=_n(before, after, "buffers_written") or 0,
                              write_ms=_d(before, after, "write_ms") or 0.0,
                              sync_ms=_d(before, after, "sync_ms") or 0.0,
                              running_at_start=bool(before["running"]), running_at_end=bool(after["running"]))


class IoCollector(BenchCounters[dict[tuple[str, ...], Row]]):
    """pg_stat_io: per backend type, object and context, the rows whose counters moved."""

    name = "pg_stat_io"
    needs = Needs(since=160000, lacking="has no pg_stat_io (16+)")
    _KEY = ("backend_type", "object", "context")
    _COUNTS = ("reads", "writes", "writebacks", "extends", "hits", "evictions", "reuses", "fsyncs")
    _TIMES = ("read_ms", "write_ms", "fsync_ms", "read_bytes", "write_bytes")

    def __init__(self, session: Session, version_num: int) -> None:
        super().__init__(session)
        self.version_num = version_num

    def read(self, conn: psycopg.Connection[Any]) -> dict[tuple[str, ...], Row]:
        self.queries_run += 1
        return {tuple(str(r[k]) for k in self._KEY): r for r in _rows(conn, "io", self.version_num)}

    def difference(self, before: dict[tuple[str, ...], Row],
                   after: dict[tuple[str, ...], Row]) -> tuple[StepRecord, ...]:
        out: list[StepRecord] = []
        for key, a in sorted(after.items()):
            b = before.get(key)
            if b is None or not _grew(b, a, self._COUNTS):
                continue
            counts = {k: int(a[k]) - int(b[k]) for k in self._COUNTS}
            if not any(counts.values()):
                continue
            out.append(from_row(IoStep, {**dict(zip(self._KEY, key, strict=True)), **counts,
                                         **{k: float(a[k]) - float(b[k]) for k in self._TIMES}}))
        return tuple(out)


def server_collectors(session: Session, version_num: int, settle_s: float) -> list[Collector]:
    """Every server-side collector, pg_stat_database first (it waits for the counters to settle,
    after which the others read); collect.protocol.Collectors leaves out those this server cannot
    serve."""
    return [DatabaseCollector(session, settle_s), WalCollector(session, version_num),
            CheckpointCollector(session, version_num), IoCollector(session, version_num), KcacheCollector(session)]
