"""The analysis of one run: per client count (and variant) summaries across
repetitions, system figures, wait profiles, checks and warnings. Pure: it reads
a RunData and returns records for the renderers."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pgknee.analyze import checks as ck
from pgknee.analyze.waits import total_aas, wait_profile
from pgknee.keys import (
    AT_END,
    BEFORE_IDLE,
    MEM_AVAILABLE,
    MEM_CACHED,
    PSS_IDLE_MEAN,
    PSS_SERVER,
    CheckStatus,
    Env,
    PoolerFact,
    StepFact,
    commits_per_txn,
    memory_fact,
    setting,
)
from pgknee.rules import BEST, DEFAULT_NOISE_PCT, DEFAULT_SUMMARY, is_noisy, measured_window, spread_pct
from pgknee.types import OsSample, RunData, RunRecord, ScriptRow, StepRecord, WaitRow


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


POOLER_CPU_LIMIT = 85.0  # % of one core: pgbouncer is single-threaded


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
    checks: tuple[tuple[int, tuple[ck.Check, ...]], ...]  # per rep
    noise_pct: float = DEFAULT_NOISE_PCT  # TPS spread across repetitions above which the step is noisy
    pooler: PoolerRow | None = None
    memory: MemoryRow | None = None

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


@dataclass(frozen=True)
class RunView:
    data: RunData
    groups: tuple[Group, ...]
    warnings: tuple[str, ...] = field(default=())
    summary: str = DEFAULT_SUMMARY

    @property
    def run(self) -> RunRecord:
        return self.data.run

    def variants(self) -> list[str]:
        seen: list[str] = []
        for g in self.groups:
            if g.variant not in seen:
                seen.append(g.variant)
        return seen


def _system(samples: Sequence[OsSample]) -> SystemRow:
    if not samples:
        return SystemRow(None, None, None, None, None, None, None, None, None, None, None)

    def busy(s: OsSample) -> float:
        return 100.0 - s.cpu_idle

    peak = max(samples, key=busy)
    client = [s.client_cpu_pct for s in samples if s.client_cpu_pct is not None]
    return SystemRow(
        peak_cpu=busy(peak), peak_user=peak.cpu_user, peak_system=peak.cpu_system, peak_nice=peak.cpu_nice,
        peak_iowait=peak.cpu_iowait, mean_cpu=statistics.fmean(busy(s) for s in samples),
        peak_load1=max(s.load1 for s in samples), ctx_per_s=statistics.fmean(s.ctx_per_s for s in samples),
        procs_running=statistics.fmean(s.procs_running for s in samples),
        mem_available_mb=min(s.mem_available_kb for s in samples) / 1024.0,
        client_cpu=statistics.fmean(client) if client else None,
        mean_user=statistics.fmean(s.cpu_user for s in samples),
        mean_system=statistics.fmean(s.cpu_system for s in samples),
        mean_nice=statistics.fmean(s.cpu_nice for s in samples),
        mean_iowait=statistics.fmean(s.cpu_iowait for s in samples),
        mean_other=statistics.fmean(max(0.0, busy(s) - s.cpu_user - s.cpu_system - s.cpu_nice - s.cpu_iowait)
                                    for s in samples))


def _merge_counts(lists: Sequence[Sequence[tuple[str, str, int]]]) -> list[tuple[str, str, int]]:
    acc: dict[tuple[str, str], int] = {}
    for lst in lists:
        for t, e, n in lst:
            acc[(t, e)] = acc.get((t, e), 0) + n
    return [(t, e, n) for (t, e), n in acc.items()]


def _scripts(data: RunData, done: Sequence[StepRecord]) -> tuple[ScriptSummary, ...]:
    by_no: dict[int, list[ScriptRow]] = {}
    for s in done:
        for row in data.scripts.get(s.step_id, []):
            by_no.setdefault(row.script_no, []).append(row)
    out = []
    for _no, rows in sorted(by_no.items()):
        r0 = rows[0]
        out.append(ScriptSummary(
            name=r0.script, weight=r0.weight, transactions=int(statistics.median(r.transactions for r in rows)),
            failed=sum(r.failed for r in rows), retried=sum(r.retried for r in rows),
            tps=Spread.of([r.tps for r in rows]), lat_avg=Spread.of([r.lat_avg_ms for r in rows]),
            p95=Spread.of([r.lat_p95_ms for r in rows]), p99=Spread.of([r.lat_p99_ms for r in rows])))
    return tuple(out)


def _pooler_row(data: RunData, done: Sequence[StepRecord]) -> PoolerRow | None:
    steps = [s for s in done if s.pooler_kind is not None]
    if not steps:
        return None
    per: dict[str, list[float]] = {}

    def add(key: str, value: float | None) -> None:
        if value is not None:
            per.setdefault(key, []).append(value)

    missing = None
    n = 0
    for s in steps:
        p = data.pooler.get(s.step_id)
        if p is None:
            continue
        # while pgbench is still opening its connections the pool is filling: leave that out
        start = (s.bench_start or 0.0) + (s.conn_time_ms or 0.0) / 1000.0
        samples = [x for x in p.samples if x.epoch >= start] or p.samples
        n += len(samples)
        if samples:
            add("cl_active", statistics.fmean(x.cl_active for x in samples))
            add("cl_waiting", statistics.fmean(x.cl_waiting for x in samples))
            add("cl_waiting_peak", max(x.cl_waiting for x in samples))
            add("sv_active", statistics.fmean(x.sv_active for x in samples))
            add("sv_active_peak", max(x.sv_active for x in samples))
            add("sv_idle", statistics.fmean(x.sv_idle for x in samples))
            add("maxwait", max(x.maxwait_us for x in samples) / 1000.0)
        xacts = p.delta("total_xact_count")
        if xacts:
            add("wait", (p.delta("total_wait_time") or 0.0) / xacts / 1000.0)
            add("xact", (p.delta("total_xact_time") or 0.0) / xacts / 1000.0)
            add("server", ((p.delta("total_xact_time") or 0.0) - (p.delta("total_wait_time") or 0.0))
                / xacts / 1000.0)
        cpu = [o.pooler_cpu_pct for o in data.os.get(s.step_id, []) if o.pooler_cpu_pct is not None]
        if cpu:
            add("cpu", statistics.fmean(cpu))
            add("cpu_peak", max(cpu))
        snaps = data.snaps.get(s.step_id)
        if snaps and snaps[0]:
            add("backends", snaps[1])
        missing = p.facts.get(PoolerFact.MISSING) or missing

    def f(key: str) -> Spread | None:
        return Spread.of(per.get(key, []))

    s0 = steps[0]
    return PoolerRow(kind=s0.pooler_kind or "", mode=s0.pool_mode, pool_size=s0.pool_size, samples=n,
                     cl_active=f("cl_active"), cl_waiting=f("cl_waiting"), cl_waiting_peak=f("cl_waiting_peak"),
                     sv_active=f("sv_active"), sv_active_peak=f("sv_active_peak"), sv_idle=f("sv_idle"),
                     maxwait_ms_peak=f("maxwait"), wait_ms_per_txn=f("wait"), xact_ms=f("xact"),
                     server_ms=f("server"), cpu=f("cpu"),
                     cpu_peak=f("cpu_peak"), server_backends=f("backends"), missing=missing)


_END_AVAILABLE = memory_fact(AT_END, MEM_AVAILABLE)
_BEFORE_IDLE_AVAILABLE = memory_fact(BEFORE_IDLE, MEM_AVAILABLE)


def _memory_row(data: RunData, done: Sequence[StepRecord]) -> MemoryRow | None:
    if not done:
        return None
    per: dict[str, list[float]] = {}
    for s in done:
        f = data.facts.get(s.step_id, {})
        pg = data.pgdb.get(s.step_id, {})
        window = measured_window(s.transactions, s.tps, s.duration_s)
        values = {
            "avail": f.get(_END_AVAILABLE), "cached": f.get(memory_fact(AT_END, MEM_CACHED)),
            "pss": f.get(memory_fact(AT_END, PSS_SERVER)), "idle_pss": f.get(memory_fact(AT_END, PSS_IDLE_MEAN)),
            "drop": (f[_BEFORE_IDLE_AVAILABLE] - f[_END_AVAILABLE]
                     if _BEFORE_IDLE_AVAILABLE in f and _END_AVAILABLE in f else None),
            "read": pg["blks_read"] / window if "blks_read" in pg and window else None,
            "hit": (100.0 * pg["blks_hit"] / (pg["blks_hit"] + pg["blks_read"])
                    if pg.get("blks_hit", 0) + pg.get("blks_read", 0) > 0 else None),
            "open": f.get(StepFact.IDLE_OPEN_S), "maxconn": f.get(setting("max_connections"))}
        for k, x in values.items():
            if x is not None:
                per.setdefault(k, []).append(x / 1024.0 if k in ("avail", "cached", "pss", "idle_pss", "drop") else x)

    def fig(key: str) -> Spread | None:
        return Spread.of(per.get(key, []))

    if not per:
        return None
    return MemoryRow(idle=done[0].idle, idle_kind=done[0].idle_kind, available_mb=fig("avail"),
                     available_drop_mb=fig("drop"), cached_mb=fig("cached"), server_pss_mb=fig("pss"),
                     idle_backend_pss_mb=fig("idle_pss"), blks_read_per_s=fig("read"), hit_pct=fig("hit"),
                     idle_open_s=fig("open"), max_connections=per["maxconn"][0] if "maxconn" in per else None)


def _commits_per_txn(data: RunData, s: StepRecord) -> float:
    """Commits per logged transaction of a step: its scripts' own (recorded with the run),
    weighted by the transactions each ran. 1 when the run did not record them."""
    num = den = 0.0
    for row in data.scripts.get(s.step_id, []):
        per = data.env.get(commits_per_txn(s.variant, row.script))
        if per is None:
            return 1.0
        tx = float(row.transactions)
        num, den = num + tx * float(per), den + tx
    return num / den if den else 1.0


def _step_checks(data: RunData, s: StepRecord) -> tuple[ck.Check, ...]:
    n, _, _ = data.snaps.get(s.step_id, (0, 0.0, 0.0))
    rows = wait_profile(data.waits.get(s.step_id, []), n)
    pgdb = data.pgdb.get(s.step_id, {})
    checks = [ck.tps_vs_pgbench(s), ck.tps_vs_database(s, _commits_per_txn(data, s)), ck.littles_law(s),
              ck.sampled_vs_active_time(s, total_aas(rows) if n else None, n, pgdb.get("active_time"),
                                        data.busy.get(s.step_id), pgdb.get("idle_in_transaction_time")),
              ck.client_cpu(s, data.os.get(s.step_id, [])), ck.failures(s)]
    if s.pooler_kind is not None:
        checks.append(ck.pooler_occupancy(s, data.pooler.get(s.step_id)))
    return tuple(checks)


def build(data: RunData, summary: str | None = None, noise_pct: float | None = None) -> RunView:
    """`summary`: 'median' of the repetitions (default), or 'best' of N (the repetition with the
    highest TPS, as article 002 reports); `noise_pct`: the TPS spread across repetitions above
    which a step is flagged noisy. By default both are what the run's plan asked for."""
    plan = data.run.plan
    if summary is None:
        summary = plan.get("summary", DEFAULT_SUMMARY)
    if noise_pct is None:
        noise_pct = float(plan.get("noise_pct", DEFAULT_NOISE_PCT))
    order: list[tuple[str, int]] = []
    by_key: dict[tuple[str, int], list[StepRecord]] = {}
    for s in data.steps:
        key = (s.variant, s.clients)
        if key not in by_key:
            order.append(key)
            by_key[key] = []
        by_key[key].append(s)
    groups = []
    for key in order:
        steps = by_key[key]
        done = [s for s in steps if s.status == "completed"]
        n_snap = sum(data.snaps.get(s.step_id, (0, 0.0, 0.0))[0] for s in done)
        all_os = [x for s in done for x in data.os.get(s.step_id, [])]
        best = max(done, key=lambda x: x.tps or 0.0) if done and summary == BEST else None

        def fig(attr: str, steps: list[StepRecord] = done, best: StepRecord | None = best) -> Spread | None:
            """Median of the repetitions, or (best of N) the figure of the rep with the highest TPS."""
            f = Spread.of([float(v) for x in steps if (v := getattr(x, attr)) is not None])
            if f is None or best is None or getattr(best, attr) is None:
                return f
            return Spread(float(getattr(best, attr)), f.lo, f.hi, f.n)

        groups.append(Group(
            variant=key[0], clients=key[1], steps=tuple(steps), done=tuple(done),
            tps=fig("tps"), lat_avg=fig("lat_avg_ms"), lat_stddev=fig("lat_stddev_ms"), p50=fig("lat_p50_ms"),
            p95=fig("lat_p95_ms"), p99=fig("lat_p99_ms"), lat_max=fig("lat_max_ms"),
            transactions=fig("transactions"),
            failed=sum(s.failed or 0 for s in done), retried=sum(s.retried or 0 for s in done),
            threads=steps[0].threads, system=_system(all_os), scripts=_scripts(data, done),
            waits=tuple(wait_profile(_merge_counts([data.waits.get(s.step_id, []) for s in done]), n_snap)),
            waits_bg=tuple(wait_profile(_merge_counts([data.waits_bg.get(s.step_id, []) for s in done]), n_snap)),
            snapshots=n_snap, checks=tuple((s.rep, _step_checks(data, s)) for s in done), noise_pct=noise_pct,
            pooler=_pooler_row(data, done), memory=_memory_row(data, done)))
    view = RunView(data, tuple(groups), summary=summary)
    return RunView(data, tuple(groups), tuple(_warnings(view)), summary=summary)


def _pooler_warnings(name: str, p: PoolerRow | None) -> list[str]:
    out = []
    if p is not None and p.cpu is not None and p.cpu.value > POOLER_CPU_LIMIT:
        peak = f"{p.cpu_peak.value:.0f}" if p.cpu_peak else "-"
        out.append(f"{name}: pgbouncer used {p.cpu.value:.0f}% of one core on average (peak {peak}%): it is "
                   "single-threaded, so this step shows the pooler's ceiling rather than the server's")
    if p is not None and p.missing:
        out.append(f"{name}: pooler figures missing: {p.missing}")
    return out


def _warnings(view: RunView) -> list[str]:
    out: list[str] = []
    data = view.data
    run = data.run
    done = [s for s in data.steps if s.status == "completed"]
    if run.status == "interrupted":
        out.append(f"the run was interrupted after {len(done)} of {run.steps_planned} steps; "
                   "the completed steps are shown")
    elif run.status == "failed":
        out.append(f"the run failed: {run.status_reason}")
    for s in data.steps:
        if s.status == "failed":
            out.append(f"step c{s.clients} rep {s.rep} failed: {s.status_reason}")
    plan = run.plan
    if plan.get("reps", 1) == 1 and len(done) > 1:
        out.append("one repetition per step: run-to-run noise (about ±15% on small shared machines) is not "
                   "visible; use --reps 3 before drawing conclusions")
    for g in view.groups:
        name = g.label + ("" if len(view.variants()) == 1 else f" {g.variant}")
        if g.noisy and g.tps is not None:
            out.append(f"{name}: noisy, TPS varies {g.tps_spread_pct:.0f}% across {g.tps.n} repetitions "
                       f"({g.tps.lo:.0f}..{g.tps.hi:.0f}; threshold {g.noise_pct:g}%)")
        out.extend(_pooler_warnings(name, g.pooler))
        slow = [s for s in g.done if s.conn_time_ms and s.conn_time_ms / 1000.0 > 0.2 * s.duration_s]
        if slow:
            worst = max(slow, key=lambda s: s.conn_time_ms or 0.0)
            window = measured_window(worst.transactions, worst.tps, 0.0)
            after = f"the {window:.1f} s after that" if window else "the time after that"
            out.append(f"{name}: pgbench took {(worst.conn_time_ms or 0) / 1000:.1f} s to open its {worst.clients} "
                       f"connections; TPS counts {after} (as pgbench's own does); the bench-phase samples include "
                       "the connecting, and a longer --duration measures more")
        for rep, checks in g.checks:
            for c in checks:
                if c.status is CheckStatus.WARN:
                    out.append(f"{name} rep {rep}: {c.id}: {c.detail}")
    if plan.get("duration_s", 60) < 60 and done:
        out.append("steps are shorter than a minute: the 1-minute load average lags behind them; "
                   "read runnable processes (procs running) instead")
    money = data.env.get(Env.CHECK_MONEY)
    if money is not None and data.env.get(Env.CHECK_MONEY_OK) == "false":
        out.append(money)
    return out


def planned_variants(view: RunView) -> list[str]:
    """The variants the run's plan asked for (those that ran, for a plan without names)."""
    return [str(v.get("name")) for v in view.run.plan.get("variants") or []] or view.variants()


def combined_name(label: str, view: RunView, variant: str) -> str:
    """A variant's name in several runs combined: the run's label, or LABEL:variant when the
    run planned several."""
    return label if len(planned_variants(view)) <= 1 else f"{label}:{variant}"


def combined(views: Sequence[RunView], labels: Sequence[str]) -> RunView:
    """Several runs as one view whose 'variants' are LABEL or LABEL:variant. Steps keep
    their own records; the first run's environment stands for the machine."""
    groups = []
    steps: list[StepRecord] = []
    progress: dict[int, list[tuple[float, float]]] = {}
    seq = 0
    cursor: float | None = None  # the runs' steps follow one another on the timeline, 10 s apart
    for label, v in zip(labels, views, strict=True):
        groups += [dataclasses.replace(g, variant=combined_name(label, v, g.variant)) for g in v.groups]
        own = sorted(v.data.steps, key=lambda s: s.seq)
        starts = [s.bench_start for s in own if s.bench_start]
        shift = 0.0 if cursor is None or not starts else cursor - min(starts)
        for s in own:
            seq += 1
            steps.append(dataclasses.replace(
                s, variant=combined_name(label, v, s.variant), seq=seq,
                bench_start=s.bench_start + shift if s.bench_start else None,
                bench_end=s.bench_end + shift if s.bench_end else None))
        ends = [s.bench_end + shift for s in own if s.bench_end]
        if ends:
            cursor = max(ends) + 10.0
        progress.update(v.data.progress)
    data = dataclasses.replace(views[0].data, steps=steps, progress=progress)
    return dataclasses.replace(views[0], data=data, groups=tuple(groups),
                               warnings=tuple(f"{lb}: {w}" for lb, v in zip(labels, views, strict=True)
                                              for w in v.warnings))
