"""Frozen records that cross layers (driver -> runner -> store -> analyze -> report)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from pgknee.model.facts import StepFacts
from pgknee.model.kinds import StepRecord as Record
from pgknee.model.kinds import first_of
from pgknee.model.samples import (
    OsSample,
    OsSamples,
    PoolerFacts,
    PoolerProcessSample,
    PoolerSample,
    PoolerSamples,
    ServerOsSample,
    ServerOsSamples,
)
from pgknee.model.server import RECORDS, DatabaseStep, ServerRecord


@dataclass(frozen=True, slots=True)
class LatencyStats:
    count: int
    mean_ms: float
    stddev_ms: float
    min_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class ScriptResult:
    script_no: int
    name: str
    weight: int
    transactions: int
    failed: int
    retried: int
    tps: float
    latency: LatencyStats | None


@dataclass(frozen=True, slots=True)
class ScriptRow:
    """One script's results in one step, as the store holds them (step_scripts); the field
    names are the table's columns."""

    script_no: int
    script: str
    weight: int
    transactions: int
    failed: int
    retried: int
    tps: float | None
    lat_avg_ms: float | None
    lat_stddev_ms: float | None
    lat_p50_ms: float | None
    lat_p95_ms: float | None
    lat_p99_ms: float | None
    lat_max_ms: float | None


@dataclass(frozen=True, slots=True)
class ProgressPoint:
    t_s: float
    tps: float
    lat_ms: float | None
    stddev_ms: float | None
    failed: int | None


@dataclass(frozen=True, slots=True)
class AgentShare:
    """One load generator's part of a step run by agents (run/distributed.py): what it ran, what
    it measured on its own, and what the report needs to judge it (its CPU, its round trip, its
    clock). The step's figures come from the agents' merged counts and histograms, not these."""

    agent: str
    host: str
    clients: int
    threads: int
    cpus: int
    exit_code: int
    transactions: int | None
    failed: int | None
    tps: float | None
    bench_start: float | None  # its measured window, on the store's clock
    bench_end: float | None
    cpu_pct: float | None  # its pgbench's CPU, % of one core
    rtt_ms: float | None
    clock_offset_ms: float | None
    lat_p50_ms: float | None
    lat_p99_ms: float | None


@dataclass(frozen=True, slots=True)
class PgbenchSummary:
    """What pgbench printed at the end (its latency average is derived unless -P/-R/-L)."""

    transactions: int | None = None
    failed: int | None = None
    tps: float | None = None
    lat_avg_ms: float | None = None
    conn_time_ms: float | None = None
    duration_s: float | None = None


@dataclass(frozen=True, slots=True)
class StepMeasurement:
    """One pgbench run, measured from its transaction log."""

    transactions: int
    failed: int
    retried: int
    retries: int
    tps: float
    latency: LatencyStats | None
    scripts: tuple[ScriptResult, ...]
    failures: dict[str, int] = field(default_factory=dict)
    lag: LatencyStats | None = None  # open loop (--rate): schedule lag
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class StepRecord:
    """A step as the store holds it."""

    step_id: int
    run_id: str
    seq: int
    variant: str
    clients: int
    rep: int
    threads: int
    protocol: str
    duration_s: float
    warmup_s: float
    status: str
    status_reason: str | None
    started_at: str
    bench_start: float | None
    bench_end: float | None
    transactions: int | None
    failed: int | None
    retried: int | None
    retries: int | None
    tps: float | None
    lat_avg_ms: float | None
    lat_stddev_ms: float | None
    lat_min_ms: float | None
    lat_p50_ms: float | None
    lat_p95_ms: float | None
    lat_p99_ms: float | None
    lat_max_ms: float | None
    tps_pgbench: float | None
    lat_avg_pgbench_ms: float | None
    conn_time_ms: float | None
    tps_db: float | None
    pipeline: int = 0
    connect_per_txn: int = 0
    rate: float | None = None
    lag_avg_ms: float | None = None
    lag_p99_ms: float | None = None
    lag_max_ms: float | None = None
    think_ms: float = 0.0  # latency figures exclude it
    pooler_kind: str | None = None  # None: direct
    pool_mode: str | None = None
    pool_size: int | None = None
    idle: int = 0  # sessions held open beside the workers
    idle_kind: str | None = None
    settings_json: str | None = None  # the variant's server settings, if it restarted the server
    pool_reserve: int = 0  # a managed pgbouncer's reserve_pool_size
    rtt_ms: float = 0.0  # a simulated network round trip (rtt=), ms
    rtt_jitter_ms: float = 0.0
    pool_processes: int = 1  # managed pgbouncer processes on one port, each with its own pool


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    created_at: str
    finished_at: str | None
    status: str
    status_reason: str | None
    workload: str
    target_kind: str
    target_label: str
    plan_json: str
    steps_planned: int
    owner: str | None = None  # host:pid:start of the pgknee that wrote it last
    heartbeat_at: float | None = None  # when that pgknee last wrote to it (epoch s, its host's clock)

    @property
    def plan(self) -> dict[str, Any]:
        """The validated plan the run was made from (DSN without secrets)."""
        plan: dict[str, Any] = json.loads(self.plan_json)
        return plan


@dataclass(frozen=True, slots=True)
class WaitRow:
    wait_event_type: str
    wait_event: str
    count: int
    aas: float


@dataclass(frozen=True)
class PoolerRecord:
    """A step through a pooler, as the store holds it: SHOW POOLS samples (bench phase) and the
    step's pooler facts (SHOW STATS deltas as floats under 'delta.*', settings and versions as
    text). Not the pooler lab's StepPooler, which runs a pooler for a step."""

    samples: list[PoolerSample]
    facts: PoolerFacts
    processes: list[PoolerProcessSample] = field(default_factory=list)  # each process's own (format 17+)

    def delta(self, name: str) -> float | None:
        return self.facts.delta(name)


class CapturedStatement(NamedTuple):
    """A statement of a captured workload as the source ran it (table workload_statements)."""

    statement: str  # its id in the manifest
    query: str
    kind: str  # read | write
    share_calls: float  # of the source's calls
    share_time: float


class ReplayedStatement(NamedTuple):
    """What a step replayed of a captured statement, from the target's pg_stat_statements (table
    step_statements)."""

    step_id: int
    statement: str
    calls: float
    total_ms: float


R = TypeVar("R")


@dataclass(frozen=True)
class RunData:
    """Everything the analysis of one run reads, as fetched from the store."""

    run: RunRecord
    env: dict[str, str]
    commands: list[tuple[int | None, str, list[str]]]
    steps: list[StepRecord]
    scripts: dict[int, list[ScriptRow]]
    failures: dict[int, dict[str, int]]
    waits: dict[int, list[tuple[str, str, int]]]  # bench phase, client backends
    waits_bg: dict[int, list[tuple[str, str, int]]]  # bench phase, background processes
    snaps: dict[int, tuple[int, float, float]]  # bench phase: (snapshots, mean client backends, mean ms)
    # bench phase: mean sessions in a statement or transaction (active + idle in transaction)
    busy: dict[int, float] = field(default_factory=dict)
    facts: dict[int, StepFacts] = field(default_factory=dict)  # how each step's figures were got
    progress: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # pgbench -P 1: (t s, TPS)
    # a captured workload's statements and its steps' replay of them (store.db.Store.statement_mix)
    statement_mix: tuple[list[CapturedStatement], list[ReplayedStatement]] = field(default_factory=lambda: ([], []))
    agents: dict[int, list[AgentShare]] = field(default_factory=dict)  # steps run by agents: each one's share
    # bench phase: mean backends per snapshot pg_stat_activity hid from the role (steps with any)
    hidden: dict[int, float] = field(default_factory=dict)
    # every step's records of every kind that says how it is read back (store.db.Store.records): a new
    # kind reaches the analysis through `of` with no new code in the store or the loader
    records: dict[int, tuple[Any, ...]] = field(default_factory=dict)

    def of(self, step_id: int, kind: type[R]) -> R | None:
        """The step's record of this kind, if it has one (the first, for a kind with several)."""
        return first_of(self.records.get(step_id, ()), kind)

    def all_of(self, step_id: int, kind: type[R]) -> tuple[R, ...]:
        return tuple(r for r in self.records.get(step_id, ()) if isinstance(r, kind))

    def database(self, step_id: int) -> DatabaseStep:
        """pg_stat_database's change over the step's bench phase (empty when not read)."""
        return self.of(step_id, DatabaseStep) or DatabaseStep()

    def client_os(self, step_id: int) -> tuple[OsSample, ...]:
        """The client machine's OS samples over the step (this machine's: the server's too when embedded)."""
        return getattr(self.of(step_id, OsSamples), "rows", ())

    def server_os(self, step_id: int) -> tuple[ServerOsSample, ...]:
        """The server machine's OS samples over the bench phase, when it was sampled apart."""
        return getattr(self.of(step_id, ServerOsSamples), "rows", ())

    def server(self, step_id: int) -> tuple[ServerRecord, ...]:
        """The server's WAL, checkpoints, I/O and pg_stat_kcache over the bench phase (pgknee.model.server)."""
        return tuple(r for r in self.records.get(step_id, ()) if isinstance(r, RECORDS))

    def pooler(self, step_id: int) -> PoolerRecord | None:
        """A step through a pooler: its SHOW POOLS samples and its facts; None for a step straight to
        the server."""
        if not any(s.step_id == step_id and s.pooler_kind is not None for s in self.steps):
            return None
        samples = self.of(step_id, PoolerSamples)
        return PoolerRecord(list(getattr(samples, "rows", ())), self.of(step_id, PoolerFacts) or PoolerFacts(),
                            list(getattr(samples, "processes", ())))



@dataclass(frozen=True)
class StepResult:
    """Everything one step measured, frozen: what the store writer writes, and nothing else."""

    step_id: int
    status: str  # 'completed' | 'failed'
    reason: str | None
    pgbench_exit: int
    bench_start: float
    bench_end: float
    summary: PgbenchSummary
    measurement: StepMeasurement | None
    tps_db: float | None
    progress: tuple[ProgressPoint, ...]
    facts: StepFacts  # how its figures were got (pgknee.model.facts)
    # what each collector handed back (pgknee.model.kinds): pg_stat_database's change, the samples of
    # pg_stat_activity, the OS, the pooler, the waits, the server's WAL, checkpoints and I/O
    records: tuple[Record, ...] = ()
    agents: tuple[AgentShare, ...] = ()  # a step run by agents: each one's share

    def of(self, cls: type[R]) -> R | None:
        """Its record of that kind, if it has one."""
        return first_of(self.records, cls)


@dataclass(frozen=True, slots=True)
class Reopening:
    """A stored run that --extend or --resume reopens: its id, the plan it runs under (for
    --extend, the stored one with the new client counts), and what pgknee read of it when it
    worked out the steps to run (its plan, its completed steps). The run is claimed only if it
    is still as read: another pgknee may have extended or resumed it meanwhile."""

    run_id: str
    plan: dict[str, Any]
    read_plan: dict[str, Any]
    read_completed: int
