"""What the samplers of a step hand back (collect.protocol): their typed rows, one NamedTuple per
table (the columns in the table's order after run_id and step_id; the OS and pooler samples leave
out the first, their time as text, which the store derives from the epoch), one shape for the
sampler, the store and the analysis, and the step's records that hold them, each stored and read
back the same way (pgknee.model.kinds). Also pg_wait_sampling's profile and how a step's pooler
ran."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from pgknee.base.clock import iso_of
from pgknee.model.facts import ActivityGaps
from pgknee.model.keys import (
    POOLER_DELTA,
    POOLER_EXTERNAL,
    POOLER_PROCESS,
    POOLER_SETTING,
    PoolerFact,
    pooler_delta,
    pooler_external,
    pooler_process,
    pooler_setting,
)
from pgknee.model.kinds import Read, Rows, StoredRow, columns_of, kind


class SnapshotRow(NamedTuple):
    """One pg_stat_activity snapshot's counts, the empty ones too (table snapshots)."""

    collected_at: str
    phase: str
    epoch: float
    backends: int
    client_backends: int
    active: int
    idle_in_xact: int
    hidden: int | None  # rows this role may not see (counted, not stored)
    query_ms: float  # the sampler's query's own time


class SessionRow(NamedTuple):
    """One sampled session of a snapshot (table snap_pg_stat_activity; collect.activity.ACTIVITY_COLUMNS
    after the time and the phase). Times are the server's, as text."""

    collected_at: str
    phase: str
    pid: int
    leader_pid: int | None
    datid: int | None
    datname: str | None
    usesysid: int | None
    usename: str | None
    application_name: str | None
    client_addr: str | None
    client_hostname: str | None
    client_port: int | None
    backend_start: str | None
    xact_start: str | None
    query_start: str | None
    state_change: str | None
    wait_event_type: str | None
    wait_event: str | None
    state: str | None
    backend_xid: str | None
    backend_xmin: str | None
    query_id: int | None
    query: str | None  # None when the plan keeps no query texts
    backend_type: str | None


class OsSample(NamedTuple):
    """One tick of this machine's OS (table os_samples, its time _collected_at from the epoch): the
    sampler's row, the store's and the analysis'."""

    phase: str
    epoch: float
    cpu_user: float
    cpu_nice: float
    cpu_system: float
    cpu_iowait: float
    cpu_irq: float
    cpu_steal: float
    cpu_idle: float
    load1: float
    ctx_per_s: float
    procs_running: int
    procs_blocked: int
    mem_total_kb: int
    mem_available_kb: int
    mem_free_kb: int
    cached_kb: int
    client_cpu_pct: float | None  # pgbench's process
    pooler_cpu_pct: float | None = None  # a managed pooler's busiest process, % of one core


class ServerOsSample(NamedTuple):
    """One tick of the server's OS from its own /proc (table server_os_samples; collect.serveros): CPU
    as % of all its CPUs, rates per second."""

    phase: str
    epoch: float
    cpu_user: float
    cpu_nice: float
    cpu_system: float
    cpu_iowait: float
    cpu_irq: float
    cpu_steal: float
    cpu_idle: float
    load1: float | None
    ctx_per_s: float
    procs_running: int
    procs_blocked: int
    mem_total_kb: int | None
    mem_available_kb: int | None
    disk_read_bps: float
    disk_write_bps: float
    net_rx_bps: float
    net_tx_bps: float


class PoolerProcessSample(NamedTuple):
    """One pooler process at one sample (table pooler_process_samples): its CPU since the sample
    before (% of one core, /proc) and its own SHOW POOLS counts for the benchmark's database."""

    phase: str
    epoch: float
    process: int  # 1..N
    pid: int | None
    cpu_user_pct: float | None
    cpu_system_pct: float | None
    runq_wait_pct: float | None  # the time it waited for a CPU, runnable, % of the time (schedstat)
    cl_active: int | None  # None: its console did not answer
    cl_waiting: int | None
    sv_active: int | None
    sv_idle: int | None

    @property
    def cpu_pct(self) -> float | None:
        if self.cpu_user_pct is None or self.cpu_system_pct is None:
            return None
        return self.cpu_user_pct + self.cpu_system_pct


class PoolerSample(NamedTuple):
    """One SHOW POOLS sample of the benchmark's database, its pools summed over the pooler's
    processes (table pooler_samples)."""

    phase: str
    epoch: float
    cl_active: int
    cl_waiting: int
    sv_active: int
    sv_idle: int
    sv_used: int
    sv_login: int
    maxwait_us: int  # the longest wait of the pools


@kind
@dataclass(frozen=True)
class WaitSampling:
    """pg_wait_sampling's profile over one step's bench window (collect.waitsampling): the counts
    of the benchmark's backends by wait event, and the collector's probes in the window (AAS of
    an event = count / probes)."""

    probes: int
    probes_counted: bool  # counted on a session sleeping all along; else assumed from profile_period
    window_s: float
    backends: int
    counts: tuple[tuple[str, str, int], ...]  # (wait_event_type, wait_event, count)

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        yield "insert_wait_sampling", ({"probes": self.probes, "window_s": self.window_s,
                                        "probes_counted": int(self.probes_counted), "backends": self.backends},)
        yield "insert_wait_profile", [{"wait_event_type": t, "wait_event": e, "count": n} for t, e, n in self.counts]

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (Read("step_wait_sampling", ("probes", "probes_counted", "window_s", "backends")),
                Read("step_wait_profile", ("wait_event_type", "wait_event", "count")))

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[WaitSampling, ...]:
        """The profile, the most frequent event first."""
        if not tables[0]:
            return ()
        (probes, counted, window_s, backends), *_ = tables[0]
        counts = sorted(((str(t), str(e), int(n)) for t, e, n in tables[1]), key=lambda c: (-c[2], c[0], c[1]))
        return (cls(int(probes), bool(counted), float(window_s), int(backends), tuple(counts)),)


@kind
@dataclass(frozen=True)
class ActivitySamples:
    """A step's pg_stat_activity snapshots: one row per snapshot (its counts, the empty ones too:
    the denominator of AAS) and one per sampled session, in collect.activity's column order."""

    snapshots: tuple[SnapshotRow, ...]
    rows: tuple[SessionRow, ...]
    errors: tuple[str, ...] = ()
    ticks_lost: int = 0  # sampling ticks without a connection (a gap)
    reconnects: int = 0
    interval_s: float = 0.0  # the interval the step's sampling ended at (longer than the plan's: slowed)
    ticks_late: int = 0  # ticks that began late (the query before overran its interval)

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        """The snapshots and the sessions; the sampling's gaps among the step's facts, each only when not 0."""
        gaps = ActivityGaps(self.ticks_lost or None, self.reconnects or None, self.interval_s or None,
                            self.ticks_late or None)
        return (("insert_snapshots", self.snapshots), ("insert_activity", self.rows),
                ("insert_step_facts", [{"name": k, "value": v} for k, v in gaps.items()]))


def _timed(rows: Iterable[Any]) -> Iterator[StoredRow]:
    """A tick's row as its table holds it: its time as text (_collected_at, from its epoch) first."""
    return ((iso_of(r.epoch), *r) for r in rows)


class _Rows:
    """A record that is its rows, one per tick of the step's phases, in its TABLE (stored by
    insert_TABLE, read back for the bench phase in the order of their epochs)."""

    TABLE: ClassVar[str] = ""
    ROW: ClassVar[type[Any]] = tuple
    rows: tuple[Any, ...]

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return ((f"insert_{self.TABLE}", _timed(self.rows)),)

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (Read(cls.TABLE, columns_of(cls.ROW._fields), bench_only=True),)

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[Any, ...]:
        rows = sorted((cls.ROW(*r) for r in tables[0]), key=lambda r: r.epoch)
        return (cls(rows=tuple(rows)),)  # type: ignore[call-arg]  # (each kind is a dataclass)


@kind
@dataclass(frozen=True)
class OsSamples(_Rows):
    """A step's samples of this machine's OS, one row per tick."""

    TABLE: ClassVar[str] = "os_samples"
    ROW: ClassVar[type[Any]] = OsSample
    rows: tuple[OsSample, ...]


@kind
@dataclass(frozen=True)
class ServerOsSamples(_Rows):
    """A step's samples of the server's OS when it runs elsewhere, one row per tick."""

    TABLE: ClassVar[str] = "server_os_samples"
    ROW: ClassVar[type[Any]] = ServerOsSample
    rows: tuple[ServerOsSample, ...]


@kind
@dataclass(frozen=True)
class PoolerSamples(_Rows):
    """A step's SHOW POOLS samples (the processes' summed), each process's own, and the console's
    errors (which the step's PoolerFacts keep)."""

    TABLE: ClassVar[str] = "pooler_samples"
    ROW: ClassVar[type[Any]] = PoolerSample
    rows: tuple[PoolerSample, ...]
    errors: tuple[str, ...] = ()
    processes: tuple[PoolerProcessSample, ...] = ()

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return (("insert_pooler_samples", _timed(self.rows)), ("insert_pooler_process_samples", _timed(self.processes)))

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (*super().stored_in(),
                Read("pooler_process_samples", columns_of(PoolerProcessSample._fields), bench_only=True))

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[Any, ...]:
        rows = sorted((PoolerSample(*r) for r in tables[0]), key=lambda r: r.epoch)
        procs = sorted((PoolerProcessSample(*r) for r in tables[1]), key=lambda r: (r.process, r.epoch))
        return (cls(tuple(rows), processes=tuple(procs)),)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@kind
@dataclass(frozen=True)
class PoolerFacts:
    """How a step's pooler ran: its kind ('managed', 'external'), a managed pgbouncer's version and
    what it was told, what the user's own pooler's console reported, the change of its SHOW STATS
    totals over the bench phase, and what could not be read. Stored as name/value text rows
    (step_pooler: keys.PoolerFact and the setting./delta./external. families)."""

    kind: str | None = None
    version: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    external: tuple[tuple[str, str], ...] = ()
    deltas: tuple[tuple[str, float], ...] = ()
    missing: str | None = None  # why there are no deltas
    sampler_errors: str | None = None
    per_process: tuple[tuple[int, str, float], ...] = ()  # (process, SHOW STATS total, change): processes=N

    def delta(self, name: str) -> float | None:
        return next((v for k, v in self.deltas if k == name), None)

    def process_delta(self, process: int, name: str) -> float | None:
        return next((v for p, k, v in self.per_process if p == process and k == name), None)

    def reported(self, name: str) -> str | None:
        """What the user's own pooler's console reported (version, pool_mode, pool_size, ...)."""
        return next((v for k, v in self.external if k == name), None)

    def items(self) -> Iterator[tuple[str, str]]:
        """The stored form (a delta as Python's repr of the float, which reads back exactly)."""
        for key, value in ((PoolerFact.KIND, self.kind), (PoolerFact.VERSION, self.version),
                           (PoolerFact.MISSING, self.missing), (PoolerFact.SAMPLER_ERRORS, self.sampler_errors)):
            if value is not None:
                yield key, value
        yield from ((pooler_setting(k), v) for k, v in self.settings)
        yield from ((pooler_external(k), v) for k, v in self.external)
        yield from ((pooler_delta(k), repr(v)) for k, v in self.deltas)
        yield from ((pooler_process(p, k), repr(v)) for p, k, v in self.per_process)

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return (("insert_step_pooler", [{"name": k, "value": v} for k, v in self.items()]),)

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (Read("step_pooler", ("name", "value")),)

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[PoolerFacts, ...]:
        return (cls.of_items({str(k): str(v) for k, v in tables[0]}),)

    @classmethod
    def of_items(cls, d: dict[str, str]) -> PoolerFacts:
        def family(prefix: str) -> tuple[tuple[str, str], ...]:
            return tuple((k[len(prefix):], v) for k, v in d.items() if k.startswith(prefix))

        return cls(d.get(PoolerFact.KIND), d.get(PoolerFact.VERSION), family(POOLER_SETTING), family(POOLER_EXTERNAL),
                   tuple((k, x) for k, v in family(POOLER_DELTA) if (x := _number(v)) is not None),
                   d.get(PoolerFact.MISSING),
                   d.get(PoolerFact.SAMPLER_ERRORS),
                   tuple(sorted(_per_process(family(POOLER_PROCESS)))))


def _per_process(items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, str, float]]:
    for key, value in items:
        process, _, name = key.partition(".")
        if process.isdigit() and name and (x := _number(value)) is not None:
            yield int(process), name, x
