"""The terminal's tables of one variant: its Data Summary, latency per script, the machine,
the pooler, the wait profiles; and the checks of every step. Formatting only: the figures
come from analyze/ (records, sweep, waits, checks)."""

from __future__ import annotations

from collections.abc import Callable

from rich import box
from rich.table import Table

from pgknee.analyze.checks import Check, CheckUnit, met
from pgknee.analyze.sweep import Metric, sweep
from pgknee.analyze.view import Group, PoolerRow, RunView, Spread
from pgknee.analyze.waits import WaitProfile
from pgknee.model.facts import AutoDuration, Measured, Steadiness, StepFacts
from pgknee.model.keys import CheckId, CheckStatus, Env
from pgknee.report.cells import across, fmt, matrix, span, value, with_change

MAX_WAIT_ROWS = 20

# how the Data Summary names and writes each metric
_METRIC_ROWS: dict[Metric, tuple[str, int]] = {
    Metric.TPS: ("TPS", 2), Metric.LAT_AVG: ("Avg Latency (ms)", 3), Metric.LAT_STDDEV: ("Latency StdDev (ms)", 3),
    Metric.P50: ("p50 (ms)", 3), Metric.P95: ("p95 (ms)", 3), Metric.P99: ("p99 (ms)", 3),
    Metric.LAT_MAX: ("Max (ms)", 3), Metric.TRANSACTIONS: ("Transactions", 0)}


def data_summary(view: RunView, variant: str) -> Table:
    sw = sweep(view, variant)
    groups = sw.groups
    title = "Data Summary" + view.named(variant, " — ")
    header = ["Metric", *[g.label + ("*" if g.noisy else "") for g in groups], "Best"]
    rows: list[list[str]] = []
    for m in sw.metrics:
        label, digits = _METRIC_ROWS[m.metric]
        cells = [with_change(f, change, digits) for f, change in zip(m.values, m.changes, strict=True)]
        rows.append([label, *cells, "▲ " + m.best if m.best is not None else "-"])
    if sw.lag is not None:
        for label, lags in zip(("Schedule lag avg (ms)", "Schedule lag p99 (ms)"), sw.lag, strict=True):
            rows.append([label, *[value(f, 3) for f in lags], ""])
    if sw.repeated:
        rows += _spreads(groups)
    rows.append(["Failed / Retried", *[f"{g.failed} / {g.retried}" for g in groups], ""])
    rows += _how_measured(view, groups)
    return matrix(title, header, rows)


def _how_measured(view: RunView, groups: tuple[Group, ...]) -> list[list[str]]:
    """Rows saying how each count's figures were got, where that is not the plain fixed step with
    a full log: the steady-state judgement (warm-up cut, the steady TPS's interval, the length of a
    --duration auto step and why it ended) and the share of transactions the latency comes from."""
    def facts(g: Group) -> list[StepFacts]:
        return [view.data.facts.get(s.step_id, StepFacts()) for s in g.done]

    rows = []
    if any(f.of(AutoDuration) is not None for g in groups for f in facts(g)):
        rows.append(["Step length (s)", *[", ".join(_length(f) for f in facts(g)) or "-" for g in groups],
                     "■ stopped once steady"])
    if any(f.of(Steadiness) is not None for g in groups for f in facts(g)):
        rows.append(["Steady TPS ±95% (warm-up s)",
                     *[", ".join(f"±{st.halfwidth_pct:.1f}% ({st.warmup_s:.0f})" if (st := f.of(Steadiness))
                                 else "not steady" for f in facts(g)) or "-" for g in groups], "MSER-5"])
    if any((m := f.of(Measured)) and m.log_sampling_rate < 1 for g in groups for f in facts(g)):
        rows.append(["Latency from (logged)",
                     *[", ".join(f"{(m.log_transactions or 0) if (m := f.of(Measured)) else 0:,.0f}"
                                 for f in facts(g)) or "-" for g in groups], "a sample of the transactions"])
    return rows


def _length(f: StepFacts) -> str:
    measured, auto = f.of(Measured), f.of(AutoDuration)
    return (f"{measured.bench_seconds if measured else 0:.0f}"
            + (" ■" if auto is not None and auto.stopped else ""))


def _spreads(groups: tuple[Group, ...]) -> list[list[str]]:
    """How far the repetitions of each count are apart."""
    rows = [["TPS min..max", *[span(g.tps, 0) for g in groups], ""],
            ["TPS spread %", *[f"{g.tps_spread_pct:.1f}" + (" noisy" if g.noisy else "") if g.tps else "-"
                               for g in groups], f"> {groups[0].noise_pct:g}% = noisy"]]
    spread_rows: tuple[tuple[str, Callable[[Group], Spread | None]], ...] = (
        ("Avg Latency min..max", lambda g: g.lat_avg), ("p99 min..max", lambda g: g.p99))
    for label, get in spread_rows:
        figs = [get(g) for g in groups]
        rows.append([label, *[span(f, 3) for f in figs], ""])
    return rows


def scripts_table(view: RunView, variant: str) -> Table | None:
    groups = [g for g in view.groups if g.variant == variant and g.scripts]
    if not groups:
        return None
    t = Table(title="Latency per script (ms): mean / p95 / p99", box=box.SIMPLE_HEAVY, title_justify="left")
    t.add_column("Script")
    for g in groups:
        t.add_column(g.label, justify="right")
    for i, s in enumerate(groups[0].scripts):
        cells = []
        for g in groups:
            sr = g.scripts[i] if i < len(g.scripts) else None
            if sr is None or sr.lat_avg is None:
                cells.append("-")
            else:
                cells.append(f"{fmt(sr.lat_avg.value)} / {value(sr.p95)} / {value(sr.p99)}"
                             + (f" ({sr.failed} failed)" if sr.failed else ""))
        t.add_row(f"{s.name} ({s.weight})", *cells)
    return t


def system_table(view: RunView, variant: str) -> Table:
    groups = [g for g in view.groups if g.variant == variant]
    local = view.data.env.get(Env.TARGET_LOCAL) == "true"
    cpus = view.data.env.get(Env.HOST_CPUS, "?")
    title = (f"System — {'this machine: server and client' if local else 'the client machine only'}, "
             f"{cpus} CPUs; peak = the busiest 1-second sample")
    rows: list[tuple[str, Callable[[Group], float | None], int]] = [
        ("Peak CPU total %", lambda g: g.system.peak_cpu, 1),
        ("  user % (at peak)", lambda g: g.system.peak_user, 1),
        ("  system % (at peak)", lambda g: g.system.peak_system, 1),
        ("  nice % (at peak)", lambda g: g.system.peak_nice, 1),
        ("  iowait % (at peak)", lambda g: g.system.peak_iowait, 1),
        ("Mean CPU total %", lambda g: g.system.mean_cpu, 1),
        ("Peak load average 1m", lambda g: g.system.peak_load1, 2),
        ("Runnable processes (mean)", lambda g: g.system.procs_running, 1),
        ("Context switches/s", lambda g: g.system.ctx_per_s, 0),
        ("Min memory available (MB)", lambda g: g.system.mem_available_mb, 0),
        ("pgbench CPU % of one core", lambda g: g.system.client_cpu, 0),
    ]
    out = [[label, *[fmt(get(g), digits) for g in groups]] for label, get, digits in rows]
    out.append(["pgbench threads", *[str(g.threads) for g in groups]])
    return matrix(title, ["Metric", *[g.label for g in groups]], out)


# the pooler table's rows: what, which figure, digits
_POOLER_ROWS: tuple[tuple[str, Callable[[PoolerRow], Spread | None], int], ...] = (
    ("Clients active (cl_active)", lambda p: p.cl_active, 1),
    ("Clients waiting (cl_waiting) mean", lambda p: p.cl_waiting, 1),
    ("Clients waiting, peak", lambda p: p.cl_waiting_peak, 0),
    ("Server conns active (sv_active) mean", lambda p: p.sv_active, 1),
    ("Server conns active, peak", lambda p: p.sv_active_peak, 0),
    ("Server conns idle (sv_idle) mean", lambda p: p.sv_idle, 1),
    ("Longest wait (maxwait), peak ms", lambda p: p.maxwait_ms_peak, 1),
    ("Client wait per transaction (ms)", lambda p: p.wait_ms_per_txn, 3),
    ("Transaction time at the pooler (ms)", lambda p: p.xact_ms, 3),
    ("  of it on a server connection (ms)", lambda p: p.server_ms, 3),
    ("Server backends (pg_stat_activity)", lambda p: p.server_backends, 1),
)


def pooler_table(view: RunView, variant: str) -> Table | None:
    """The pooler's own view per client count: clients active and waiting in it, server
    connections it holds, how long clients waited, its transaction time and CPU, and the
    server backends pg_stat_activity saw, beside AAS."""
    pooled = [(g, g.pooler) for g in view.groups if g.variant == variant and g.pooler is not None]
    if not pooled:
        return None
    p0 = pooled[0][1]
    n = pooled[0][0].steps[0].pool_processes
    procs = f" in each of {n} processes on one port (their figures summed; each one's below)" if n > 1 else ""
    what = {"managed": f"managed pgbouncer, {p0.mode} mode, pool {p0.pool_size}{procs}",
            "pgpool": f"managed pgpool-II, {p0.pool_size} children, a client session each (SHOW POOL_POOLS: "
                      "clients active = children with a client, waiting = the listen queue, server conns active "
                      "= in a transaction)"}.get(p0.kind, "your pooler (SHOW POOLS / SHOW STATS of its console)")
    title = f"Pooler — {variant}: {what}; means over the bench phase, medians over repetitions"
    rows = [[label, *[value(get(p), digits) for _, p in pooled]] for label, get, digits in _POOLER_ROWS]
    several = any(p.processes for _, p in pooled)
    busiest = " (the busiest process)" if several or p0.kind == "pgpool" else ""
    name = "pgpool-II" if p0.kind == "pgpool" else "pgbouncer"
    rows += [["Server AAS (pg_stat_activity)", *[fmt(g.server_aas, 2) for g, _ in pooled]],
             [f"{name} CPU % of one core, mean{busiest}", *[value(p.cpu, 0) for _, p in pooled]],
             [f"{name} CPU %, peak{busiest}", *[value(p.cpu_peak, 0) for _, p in pooled]]]
    if p0.kind == "pgpool":
        rows += [["pgpool-II CPU, all its processes, % of one core", *[value(p.cpu_all, 0) for _, p in pooled]]]
    rows += _process_rows([p for _, p in pooled]) if several else []
    return matrix(title, ["Metric", *[g.label for g, _ in pooled]], rows)


def _process_rows(pooled: list[PoolerRow]) -> list[list[str]]:
    """Each pgbouncer process (processes=N): CPU user/system, its share of the transactions, its
    clients and server connections; the figures above are the processes' sums."""
    out = []
    for n in sorted({x.process for p in pooled for x in p.processes}):
        mine = [next((x for x in p.processes if x.process == n), None) for p in pooled]
        out += [[f"process {n}: CPU user / system %",
                 *across(mine, lambda x: f"{value(x.cpu_user, 0)} / {value(x.cpu_system, 0)}")],
                [f"process {n}: waited for a CPU, % of the time", *across(mine, lambda x: value(x.runq_wait, 0))],
                [f"process {n}: share of transactions %", *across(mine, lambda x: value(x.xact_share_pct, 0))],
                [f"process {n}: clients active / server conns active",
                 *across(mine, lambda x: f"{value(x.cl_active, 1)} / {value(x.sv_active, 1)}")]]
    return out


def wait_table(title: str, profile: WaitProfile) -> Table:
    t = Table(title=f"{title}: {profile.snapshots} snapshots, total AAS {profile.total_aas:.2f}", box=box.SIMPLE,
              title_justify="left")
    t.add_column("Wait Type")
    t.add_column("Wait Event")
    t.add_column("Count", justify="right")
    t.add_column("AAS", justify="right")
    t.add_column("±", justify="right")
    rows = profile.rows
    for r, err in zip(rows[:MAX_WAIT_ROWS], profile.errors, strict=False):
        t.add_row(r.wait_event_type, r.wait_event, str(r.count), f"{r.aas:.2f}", f"{err:.2f}")
    if len(rows) > MAX_WAIT_ROWS:
        t.add_row("…", f"{len(rows) - MAX_WAIT_ROWS} more", "", "", "")
    if not rows:
        t.add_row("-", "no active sessions sampled", "0", "0.00", "")
    if profile.background:
        t.add_section()
        for r, err in zip(profile.background[:5], profile.background_errors, strict=False):
            t.add_row(f"(bg) {r.wait_event_type}", r.wait_event, str(r.count), f"{r.aas:.2f}", f"{err:.2f}")
    if profile.hidden:
        t.add_section()
        t.add_row("(hidden)", f"{profile.hidden:.1f} backends per snapshot this role may not see (their waits are "
                  "not here: GRANT pg_read_all_stats)", "", "", "")
    return t


WAIT_NOTE = ("AAS = occurrences / all snapshots of the phase (empty ones included), so the events add up to the "
             "total; ± is the 1σ sampling error. (bg) rows are background processes, not counted in the total.")


# the checks of the figures against each other, and those of what else may have set the pace
# (the client, the network, a checkpoint, the pooler, the agents): two tables when one would not fit
_AGREEMENT = frozenset({CheckId.TPS_VS_PGBENCH, CheckId.TPS_VS_COMMITS, CheckId.LITTLES_LAW,
                        CheckId.AAS_VS_ACTIVE_TIME, CheckId.FAILURES})
MAX_CHECK_COLUMNS = 7


def checks_tables(view: RunView) -> list[Table]:
    """The checks of every step: one table, or two (the figures' agreement; what else set the
    pace) when there are more than MAX_CHECK_COLUMNS checks."""
    columns = met(c for g in view.groups for _, cs in g.checks for c in cs)
    if len(columns) <= MAX_CHECK_COLUMNS:
        return [_checks_table(view, "Checks (which numbers to trust)", columns)]
    return [_checks_table(view, "Checks (which numbers to trust): the figures against each other",
                          [c for c in columns if c in _AGREEMENT]),
            _checks_table(view, "Checks: what else may have set the pace (client, network, checkpoints, pooler)",
                          [c for c in columns if c not in _AGREEMENT])]


def _checks_table(view: RunView, title: str, columns: list[CheckId]) -> Table:
    t = Table(title=title, box=box.SIMPLE, title_justify="left")
    t.add_column("Step")
    for check in columns:
        t.add_column(check)
    for g in view.groups:
        for rep, cs in g.checks:
            by = {c.id: c for c in cs}
            t.add_row(f"{g.label}{view.named(g.variant)} r{rep}",
                      *[_check_cell(by.get(check)) for check in columns])
    return t


def _check_cell(c: Check | None) -> str:
    """'ok +0.6%', 'WARN 95%', 'ok', or 'n/a'."""
    if c is None or c.status is CheckStatus.NA:
        return "n/a"
    word = "ok" if c.status is CheckStatus.OK else "WARN"
    if c.value is None:
        return word
    return f"{word} {c.value:+.1f}%" if c.unit is CheckUnit.DEVIATION_PCT else f"{word} {c.value:.0f}%"
