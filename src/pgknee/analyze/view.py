"""What the analysis of a run hands the renderers: frozen records of its client counts
(Group) with their rows (scripts, system, pooler, memory), and the run as a whole (RunView).
analyze/groups.py and analyze/run.py build them from a RunData."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from pgknee.analyze.checks import Check
from pgknee.analyze.waits import WaitProfile, profile_of, sampled_aas, wait_profile
from pgknee.model.keys import Env
from pgknee.model.results import RunData, RunRecord, StepRecord, WaitRow
from pgknee.model.rules import DEFAULT_NOISE_PCT, DEFAULT_SUMMARY, is_noisy, spread_pct


@dataclass(frozen=True)
class Spread:
    """A figure over the repetitions of a step: the value shown (the median, or with --summary
    best the best repetition's), with the min, the max and how many repetitions had it."""

    value: float
    lo: float
    hi: float
    n: int

    @staticmethod
    def of(values: Iterable[float | None]) -> Spread | None:
        vals = [v for v in values if v is not None]
        if not vals:
            return None
        return Spread(float(statistics.median(vals)), min(vals), max(vals), len(vals))


@dataclass(frozen=True)
class ScriptSummary:
    """One script of one client count, over the repetitions."""

    name: str
    weight: int
    transactions: int
    failed: int
    retried: int
    tps: Spread | None
    lat_avg: Spread | None
    p95: Spread | None
    p99: Spread | None


@dataclass(frozen=True)
class SystemRow:
    """The machine during one client count's bench phases (all its repetitions' samples)."""

    peak_cpu: float | None  # user+nice+system+iowait+irq+steal at the busiest second
    peak_user: float | None
    peak_system: float | None
    peak_nice: float | None
    peak_iowait: float | None
    mean_cpu: float | None
    peak_load1: float | None
    ctx_per_s: float | None
    procs_running: float | None
    mem_available_mb: float | None
    client_cpu: float | None  # pgbench, % of one core
    # means over the bench phase, % of all CPUs: where the time went (charts stack them)
    mean_user: float | None = None
    mean_system: float | None = None
    mean_nice: float | None = None
    mean_iowait: float | None = None
    mean_other: float | None = None  # irq, softirq and steal


@dataclass(frozen=True)
class PoolerProcessRow:
    """One pooler process at one client count (medians over the repetitions): its CPU (% of a
    core, mean over the bench phase), its share of the pooler's transactions (SHOW STATS), and
    its clients and server connections (SHOW POOLS, means)."""

    process: int
    cpu_user: Spread | None
    cpu_system: Spread | None
    xact_share_pct: Spread | None
    cl_active: Spread | None
    sv_active: Spread | None
    runq_wait: Spread | None = None  # % of the time it waited for a CPU (runnable)


@dataclass(frozen=True)
class PoolerRow:
    """The pooler's view of one client count (medians over the repetitions)."""

    kind: str  # managed | external
    mode: str | None
    pool_size: int | None
    samples: int  # SHOW POOLS samples in the bench phases
    cl_active: Spread | None
    cl_waiting: Spread | None
    cl_waiting_peak: Spread | None
    sv_active: Spread | None
    sv_active_peak: Spread | None
    sv_idle: Spread | None
    maxwait_ms_peak: Spread | None
    wait_ms_per_txn: Spread | None  # SHOW STATS: total_wait_time / total_xact_count
    xact_ms: Spread | None  # SHOW STATS: mean transaction time at the pooler (its wait for a server included)
    server_ms: Spread | None  # the same without the wait: time on a server connection
    cpu: Spread | None  # pgbouncer, % of one core, mean
    cpu_peak: Spread | None
    server_backends: Spread | None  # client backends on the server, sampled from pg_stat_activity
    missing: str | None  # what could not be measured, and why
    processes: tuple[PoolerProcessRow, ...] = ()  # each process's own, with several (processes=N)
    cpu_all: Spread | None = None  # pgpool-II: all its processes' CPU over the bench phase, % of one core


@dataclass(frozen=True)
class MemoryRow:
    """Memory and reads of one client count (medians over the repetitions); MB."""

    idle: int
    idle_kind: str | None
    available_mb: Spread | None  # MemAvailable at the end of the bench phase, idle sessions still open
    available_drop_mb: Spread | None  # MemAvailable before the idle sessions opened less at the end
    cached_mb: Spread | None
    server_pss_mb: Spread | None  # all the server's processes, proportional set size
    idle_backend_pss_mb: Spread | None  # mean per idle session's backend
    blks_read_per_s: Spread | None
    hit_pct: Spread | None
    idle_open_s: Spread | None
    max_connections: float | None  # the variant's own, after a restart


@dataclass(frozen=True)
class Group:
    """One client count of one variant, over its repetitions."""

    variant: str
    clients: int
    steps: tuple[StepRecord, ...]  # all attempts
    done: tuple[StepRecord, ...]  # completed ones
    tps: Spread | None
    lat_avg: Spread | None
    lat_stddev: Spread | None
    p50: Spread | None
    p95: Spread | None
    p99: Spread | None
    lat_max: Spread | None
    transactions: Spread | None
    failed: int
    retried: int
    threads: int
    system: SystemRow
    scripts: tuple[ScriptSummary, ...]
    waits: tuple[WaitRow, ...]
    waits_bg: tuple[WaitRow, ...]
    snapshots: int
    checks: tuple[tuple[int, tuple[Check, ...]], ...]  # per rep
    noise_pct: float = DEFAULT_NOISE_PCT  # TPS spread across repetitions above which the step is noisy
    pooler: PoolerRow | None = None
    memory: MemoryRow | None = None
    hidden: float | None = None  # backends per snapshot pg_stat_activity hid from the role

    @property
    def label(self) -> str:
        return f"c{self.clients}"

    @property
    def noisy(self) -> bool:
        return self.tps is not None and self.tps.n >= 2 and is_noisy(self._rep_tps, self.noise_pct)

    @property
    def tps_spread_pct(self) -> float:
        """(max - min) / median of the repetitions' TPS, in %."""
        return spread_pct(self._rep_tps)

    @property
    def _rep_tps(self) -> list[float]:
        return [s.tps or 0.0 for s in self.done]

    @property
    def server_aas(self) -> float | None:
        """Average active client sessions on the server over the bench phases, if sampled."""
        return sampled_aas(self.waits, self.snapshots)

    @property
    def wait_profile(self) -> WaitProfile:
        return profile_of(self.waits, self.snapshots, self.waits_bg, self.hidden)


@dataclass(frozen=True)
class MoneyCheck:
    """The workload's own check after the run (the e-wallet's: is the money all there?)."""

    text: str
    ok: bool | None  # None: the run recorded no verdict


@dataclass(frozen=True)
class RunView:
    """A run analysed: its data, its client counts in the order they first ran, the warnings,
    and the summary its figures show (median or best)."""

    data: RunData
    groups: tuple[Group, ...]
    warnings: tuple[str, ...] = field(default=())
    summary: str = DEFAULT_SUMMARY

    @property
    def run(self) -> RunRecord:
        return self.data.run

    @property
    def steps_done(self) -> int:
        return sum(1 for s in self.data.steps if s.status == "completed")

    @property
    def money(self) -> MoneyCheck | None:
        text = self.data.env.get(Env.CHECK_MONEY)
        verdict = {"true": True, "false": False}.get(self.data.env.get(Env.CHECK_MONEY_OK, ""))
        return MoneyCheck(text, verdict) if text else None

    def step_snapshots(self, step: StepRecord) -> int:
        """The pg_stat_activity snapshots of one step's bench phase."""
        return self.data.snaps.get(step.step_id, (0, 0.0, 0.0))[0]

    def step_waits(self, step: StepRecord) -> list[WaitRow]:
        """One step's wait profile (client backends, bench phase)."""
        return wait_profile(self.data.waits.get(step.step_id, []), self.step_snapshots(step))

    def named(self, variant: str, sep: str = " ") -> str:
        """The variant's name after a label or a title (' pooled'; ' — pooled' with sep ' — ')
        when the run has several variants; nothing when it has one."""
        return sep + variant if len(self.variants()) > 1 else ""

    def variants(self) -> list[str]:
        seen: list[str] = []
        for g in self.groups:
            if g.variant not in seen:
                seen.append(g.variant)
        return seen
