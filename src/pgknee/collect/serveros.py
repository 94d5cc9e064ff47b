"""The server's OS, sampled every --os-interval from its own /proc: through SQL (pg_read_file,
on a connection of pgknee's own, left out of the activity sampler like pgknee's others) or over
ssh (collect/sshproc.py). One row per interval: CPU user/system/iowait/steal (% of all the
server's CPUs), load, run queue, context switches, memory, disk and network rates."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from pgknee.base.errors import PgkneeError, first_line
from pgknee.collect import queries
from pgknee.collect.osproc import cpu_percentages
from pgknee.collect.periodic import PeriodicSampler
from pgknee.collect.proctext import (
    Stat,
    parse_diskstats,
    parse_loadavg,
    parse_meminfo,
    parse_net_dev,
    parse_stat,
)
from pgknee.collect.servermachine import PROC_FILES
from pgknee.model.samples import ServerOsSample, ServerOsSamples
from pgknee.targets import Endpoint

# what one read of the server's files gives: {'t': epoch seconds, name: text} (PROC_FILES' names);
# {} when a read gave nothing (a gap)
Files = dict[str, Any]


class FilesReader(Protocol):
    """Reads the server's files: through SQL (SqlFiles) or ssh (collect.sshproc.SshFiles)."""

    queries_run: int  # statements it ran in the benchmark database

    def __call__(self) -> Files: ...


@dataclass(frozen=True)
class _Raw:
    t: float
    stat: Stat
    mem: dict[str, int]
    load1: float | None
    disk: tuple[int, int]
    net: tuple[int, int]


def raw_of(files: Files) -> _Raw | None:
    stat = parse_stat(files.get("stat") or "")
    if stat is None:
        return None
    return _Raw(float(files["t"]), stat, parse_meminfo(files.get("meminfo") or ""),
                parse_loadavg(files.get("loadavg") or ""), parse_diskstats(files.get("diskstats") or ""),
                parse_net_dev(files.get("net_dev") or ""))


def row_of(prev: _Raw, cur: _Raw, phase: str) -> ServerOsSample | None:
    """One sample from two reads; None when no time passed between them."""
    dt = cur.t - prev.t
    if dt <= 0:
        return None
    pct = cpu_percentages(prev.stat.cpu, cur.stat.cpu)

    def rate(a: int, b: int) -> float:
        return max(0, b - a) / dt

    return ServerOsSample(phase, cur.t, pct["cpu_user"], pct["cpu_nice"], pct["cpu_system"],
                       pct["cpu_iowait"], pct["cpu_irq"], pct["cpu_steal"], pct["cpu_idle"], cur.load1,
                       rate(prev.stat.ctxt, cur.stat.ctxt), cur.stat.running, cur.stat.blocked, cur.mem.get("MemTotal"),
                       cur.mem.get("MemAvailable"), rate(prev.disk[0], cur.disk[0]), rate(prev.disk[1], cur.disk[1]),
                       rate(prev.net[0], cur.net[0]), rate(prev.net[1], cur.net[1]))




class SqlFiles:
    """The server's /proc through pg_read_file, on a connection of its own (made again after
    one is lost); each read is one statement, a commit the step's own counts leave out."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.conn: psycopg.Connection[Any] | None = None
        self.queries_run = 0
        self.errors: list[str] = []

    def __call__(self) -> Files:
        try:
            if self.conn is None or self.conn.closed:
                self.conn = self.endpoint.connect("serveros", timeout=5.0)
            self.queries_run += 1
            row = queries.one_row(self.conn, "read_files", (list(PROC_FILES.values()),))
        except (psycopg.Error, PgkneeError, OSError) as e:  # a lost connection, a restart: a gap, not a failure
            if len(self.errors) < 10:
                self.errors.append(first_line(e))
            self.close()
            return {}
        return {"t": float(row[0]), **dict(zip(PROC_FILES, row[1], strict=True))}

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(psycopg.Error):
                self.conn.close()
            self.conn = None


class ServerOsSampler(PeriodicSampler[_Raw, ServerOsSample]):
    """Like collect.osproc.OsSampler for this machine, on the same thread's schedule; `read` gives
    the server's files (or {}: a gap)."""

    def __init__(self, read: FilesReader, interval_s: float, source: str) -> None:
        super().__init__(interval_s, "pgknee-serveros")
        self.read, self.source = read, source

    @property
    def queries_run(self) -> int:
        """Through SQL (SqlFiles), each read of the files is a statement in the benchmark database."""
        return self.read.queries_run

    def _record(self, rows: tuple[ServerOsSample, ...]) -> ServerOsSamples:
        return ServerOsSamples(rows)

    def _sample_once(self) -> None:
        raw = raw_of(self.read())  # None for a gap ({}: no /proc/stat)
        if raw is None:
            return
        prev, self._prev = self._prev, raw
        self._keep(row_of(prev, raw, self.phase) if prev is not None else None)
