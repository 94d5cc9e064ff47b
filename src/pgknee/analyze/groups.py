"""One client count of one variant over its repetitions, from a run's data: the figures, the
machine, the scripts, the waits, the checks per repetition, the pooler's view and the memory.
Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pgknee.analyze import checks as ck
from pgknee.analyze.agents import agents_agree, agents_cpu
from pgknee.analyze.network import network_checks
from pgknee.analyze.serverside import checkpoint_check
from pgknee.analyze.view import Group, MemoryRow, PoolerProcessRow, PoolerRow, ScriptSummary, Spread, SystemRow
from pgknee.analyze.waits import sampled_aas, wait_profile
from pgknee.model.facts import IdleSessions, MemoryAtEnd, MemoryBeforeIdle, StepFacts
from pgknee.model.keys import commits_per_txn
from pgknee.model.results import PoolerRecord, RunData, ScriptRow, StepRecord
from pgknee.model.rules import BEST, measured_window
from pgknee.model.samples import OsSample


def group_of(data: RunData, variant: str, clients: int, steps: Sequence[StepRecord], summary: str,
             noise_pct: float) -> Group:
    """`steps`: every attempt at this count; the completed ones make the figures, each the median
    of the repetitions or (summary 'best') the figure of the repetition with the highest TPS."""
    done = [s for s in steps if s.status == "completed"]
    n_snap = sum(data.snaps.get(s.step_id, (0, 0.0, 0.0))[0] for s in done)
    best = max(done, key=lambda x: x.tps or 0.0) if done and summary == BEST else None

    def fig(attr: str) -> Spread | None:
        f = Spread.of([float(v) for x in done if (v := getattr(x, attr)) is not None])
        if f is None or best is None or getattr(best, attr) is None:
            return f
        return Spread(float(getattr(best, attr)), f.lo, f.hi, f.n)

    return Group(
        variant=variant, clients=clients, steps=tuple(steps), done=tuple(done),
        tps=fig("tps"), lat_avg=fig("lat_avg_ms"), lat_stddev=fig("lat_stddev_ms"), p50=fig("lat_p50_ms"),
        p95=fig("lat_p95_ms"), p99=fig("lat_p99_ms"), lat_max=fig("lat_max_ms"), transactions=fig("transactions"),
        failed=sum(s.failed or 0 for s in done), retried=sum(s.retried or 0 for s in done),
        threads=steps[0].threads, system=system_row([x for s in done for x in data.client_os(s.step_id)]),
        scripts=script_summaries(data, done),
        waits=tuple(wait_profile(merge_counts([data.waits.get(s.step_id, []) for s in done]), n_snap)),
        waits_bg=tuple(wait_profile(merge_counts([data.waits_bg.get(s.step_id, []) for s in done]), n_snap)),
        snapshots=n_snap, checks=tuple((s.rep, step_checks(data, s)) for s in done), noise_pct=noise_pct,
        pooler=pooler_row(data, done), memory=memory_row(data, done),
        hidden=max((data.hidden[s.step_id] for s in done if s.step_id in data.hidden), default=None))


def system_row(samples: Sequence[OsSample]) -> SystemRow:
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


def merge_counts(lists: Sequence[Sequence[tuple[str, str, int]]]) -> list[tuple[str, str, int]]:
    """Wait counts of several steps added up by event."""
    acc: dict[tuple[str, str], int] = {}
    for lst in lists:
        for t, e, n in lst:
            acc[(t, e)] = acc.get((t, e), 0) + n
    return [(t, e, n) for (t, e), n in acc.items()]


def script_summaries(data: RunData, done: Sequence[StepRecord]) -> tuple[ScriptSummary, ...]:
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


def pooler_row(data: RunData, done: Sequence[StepRecord]) -> PoolerRow | None:
    steps = [s for s in done if s.pooler_kind is not None]
    if not steps:
        return None
    per: dict[str, list[float]] = {}
    missing = None
    n = 0
    for s in steps:
        p = data.pooler(s.step_id)
        if p is None:
            continue
        used, figures = _pooler_figures(data, s, p)
        n += used
        for key, value in figures.items():
            per.setdefault(key, []).append(value)
        missing = p.facts.missing or missing

    def f(key: str) -> Spread | None:
        return Spread.of(per.get(key, []))

    s0 = steps[0]
    return PoolerRow(kind=s0.pooler_kind or "", mode=s0.pool_mode, pool_size=s0.pool_size, samples=n,
                     cl_active=f("cl_active"), cl_waiting=f("cl_waiting"), cl_waiting_peak=f("cl_waiting_peak"),
                     sv_active=f("sv_active"), sv_active_peak=f("sv_active_peak"), sv_idle=f("sv_idle"),
                     maxwait_ms_peak=f("maxwait"), wait_ms_per_txn=f("wait"), xact_ms=f("xact"),
                     server_ms=f("server"), cpu=f("cpu"),
                     cpu_peak=f("cpu_peak"), server_backends=f("backends"), missing=missing,
                     processes=_process_rows(data, steps), cpu_all=f("cpu_all"))


def _process_rows(data: RunData, steps: Sequence[StepRecord]) -> tuple[PoolerProcessRow, ...]:
    """Each pgbouncer process of a pooled client count, when there were several."""
    per: dict[tuple[int, str], list[float]] = {}
    for s in steps:
        p = data.pooler(s.step_id)
        if p is None or s.pool_processes < 2:
            continue
        start = (s.bench_start or 0.0) + (s.conn_time_ms or 0.0) / 1000.0
        total = p.delta("total_xact_count")
        for n in range(1, s.pool_processes + 1):
            rows = [x for x in p.processes if x.process == n and x.epoch >= start]
            xacts = p.facts.process_delta(n, "total_xact_count")
            figures: dict[str, list[float | int | None]] = {
                "user": [x.cpu_user_pct for x in rows], "system": [x.cpu_system_pct for x in rows],
                "wait": [x.runq_wait_pct for x in rows],
                "cl": [x.cl_active for x in rows], "sv": [x.sv_active for x in rows]}
            for key, values in figures.items():
                known = [float(v) for v in values if v is not None]
                if known:
                    per.setdefault((n, key), []).append(statistics.fmean(known))
            if xacts is not None and total:
                per.setdefault((n, "share"), []).append(100.0 * xacts / total)
    processes = sorted({n for n, _ in per})

    def f(n: int, key: str) -> Spread | None:
        return Spread.of(per.get((n, key), []))

    return tuple(PoolerProcessRow(n, f(n, "user"), f(n, "system"), f(n, "share"), f(n, "cl"), f(n, "sv"), f(n, "wait"))
                 for n in processes)


def _pooler_figures(data: RunData, s: StepRecord, p: PoolerRecord) -> tuple[int, dict[str, float]]:
    """One pooled step: the SHOW POOLS samples used, and its figures (pool means and peaks once
    pgbench has connected, SHOW STATS per transaction, pgbouncer's CPU, the server's backends)."""
    out: dict[str, float] = {}
    # while pgbench is still opening its connections the pool is filling: leave that out
    start = (s.bench_start or 0.0) + (s.conn_time_ms or 0.0) / 1000.0
    samples = [x for x in p.samples if x.epoch >= start] or p.samples
    if samples:
        out.update(cl_active=statistics.fmean(x.cl_active for x in samples),
                   cl_waiting=statistics.fmean(x.cl_waiting for x in samples),
                   cl_waiting_peak=max(x.cl_waiting for x in samples),
                   sv_active=statistics.fmean(x.sv_active for x in samples),
                   sv_active_peak=max(x.sv_active for x in samples),
                   sv_idle=statistics.fmean(x.sv_idle for x in samples),
                   maxwait=max(x.maxwait_us for x in samples) / 1000.0)
    xacts = p.delta("total_xact_count")
    if xacts:
        out.update(wait=(p.delta("total_wait_time") or 0.0) / xacts / 1000.0,
                   xact=(p.delta("total_xact_time") or 0.0) / xacts / 1000.0,
                   server=((p.delta("total_xact_time") or 0.0) - (p.delta("total_wait_time") or 0.0))
                   / xacts / 1000.0)
    cpu_s, window = p.delta("cpu_seconds"), (s.bench_end or 0.0) - (s.bench_start or 0.0)
    if cpu_s is not None and window > 0:
        out["cpu_all"] = 100.0 * cpu_s / window
    cpu = [o.pooler_cpu_pct for o in data.client_os(s.step_id) if o.pooler_cpu_pct is not None]
    if cpu:
        out.update(cpu=statistics.fmean(cpu), cpu_peak=max(cpu))
    snaps = data.snaps.get(s.step_id)
    if snaps and snaps[0]:
        out["backends"] = snaps[1]
    return len(samples), out


def memory_row(data: RunData, done: Sequence[StepRecord]) -> MemoryRow | None:
    if not done:
        return None
    per: dict[str, list[float]] = {}
    for s in done:
        f = data.facts.get(s.step_id, StepFacts())
        end, before = f.of(MemoryAtEnd) or MemoryAtEnd(), f.of(MemoryBeforeIdle) or MemoryBeforeIdle()
        idle = f.of(IdleSessions)
        pg = data.database(s.step_id)
        read, hit = pg.blks_read, pg.blks_hit
        window = measured_window(s.transactions, s.tps, s.duration_s)
        values = {
            "avail": end.mem_available_kb, "cached": end.mem_cached_kb, "pss": end.pss_server_kb,
            "idle_pss": end.pss_idle_backend_mean_kb,
            "drop": (before.mem_available_kb - end.mem_available_kb
                     if before.mem_available_kb is not None and end.mem_available_kb is not None else None),
            "read": read / window if read is not None and window else None,
            "hit": 100.0 * (hit or 0.0) / ((hit or 0.0) + (read or 0.0)) if (hit or 0.0) + (read or 0.0) > 0 else None,
            "open": idle.open_s if idle is not None else None, "maxconn": f.setting("max_connections")}
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


def _client_cpu(data: RunData, s: StepRecord) -> ck.Check:
    """The client's CPU: pgbench's here, or the busiest agent's for a step run by agents."""
    shares = data.agents.get(s.step_id)
    return agents_cpu(s, shares) if shares else ck.client_cpu(s, data.client_os(s.step_id))


def step_checks(data: RunData, s: StepRecord) -> tuple[ck.Check, ...]:
    n, _, _ = data.snaps.get(s.step_id, (0, 0.0, 0.0))
    rows = wait_profile(data.waits.get(s.step_id, []), n)
    pgdb = data.database(s.step_id)
    checks = [ck.tps_vs_pgbench(s), ck.tps_vs_database(s, _commits_per_txn(data, s), pgdb.maintenance),
              ck.littles_law(s),
              ck.sampled_vs_active_time(s, sampled_aas(rows, n), n, pgdb.active_time,
                                        data.busy.get(s.step_id), pgdb.idle_in_transaction_time),
              _client_cpu(data, s), ck.failures(s)]
    if data.agents.get(s.step_id):
        checks.append(agents_agree(s, data.agents[s.step_id]))
    if s.pooler_kind is not None:
        checks += [ck.pooler_occupancy(s, data.pooler(s.step_id)),
                   ck.pooler_bound(s, data.pooler(s.step_id), data.client_os(s.step_id))]
    checks += network_checks(s, data.facts.get(s.step_id, StepFacts()), data.snaps.get(s.step_id), rows)
    if data.server(s.step_id):
        checks.append(checkpoint_check(data, s))
    return tuple(checks)
