"""Terminal tables. Renderers return text; only the CLI prints."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.console import Group as Stack
from rich.table import Table
from rich.text import Text

from pgknee.analyze.checks import Check, CheckUnit, met
from pgknee.analyze.compare import Ratio, comparison_rows, headline, paired_ratio, saturation_point
from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.records import Group, RunView, Spread
from pgknee.analyze.summary import pct_change
from pgknee.analyze.waits import relative_error, total_aas
from pgknee.keys import CheckStatus, Env
from pgknee.plan import variant_from_dict
from pgknee.rules import BEST
from pgknee.types import WaitRow

MAX_WAIT_ROWS = 20


def render(items: Sequence[RenderableType], *, width: int = 130, color: bool = False) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, no_color=not color, highlight=False,
                      emoji=False, soft_wrap=False)
    for item in items:
        console.print(titled(item) if isinstance(item, Table) else item)
    return buf.getvalue()


def titled(t: Table) -> RenderableType:
    """A table's title on its own line, so it is not wrapped to the table's width."""
    if not t.title:
        return t
    title, t.title = t.title, None
    return Stack(Text(""), Text(str(title), style="bold"), t)


def _fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _cell(fig: Spread | None, base: Spread | None, digits: int, show_pct: bool) -> str:
    if fig is None:
        return "-"
    s = _fmt(fig.value, digits)
    if show_pct and base is not None and base is not fig:
        p = pct_change(fig.value, base.value)
        if p is not None:
            s += f" {p:+.1f}%"
    return s


def header(view: RunView) -> Text:
    r, env = view.run, view.data.env
    plan = r.plan
    done = sum(1 for s in view.data.steps if s.status == "completed")
    t = Text()
    t.append(f"Run {r.run_id}", style="bold")
    t.append(f"  {r.status}  ({done}/{r.steps_planned} steps)\n")
    t.append(f"workload {r.workload} · target {r.target_kind} {r.target_label} · "
             f"PostgreSQL {env.get(Env.SERVER_VERSION, '?').split()[0]} · "
             f"pgbench {env.get(Env.PGBENCH_VERSION, '?').split()[0]}\n")
    t.append(f"client machine: {env.get(Env.HOST_CPUS, '?')} CPUs, {env.get(Env.HOST_MEM_GB, '?')} GB · "
             f"{plan.get('duration_s')} s per step, {plan.get('reps')} rep(s), warm-up {plan.get('warmup_s')} s, "
             f"sampling every {plan.get('sample_interval_s', 0) * 1000:.0f} ms\n")
    variants = plan.get("variants") or []
    t.append("variants: " + "; ".join(f"{v['name']} = {variant_from_dict(v).describe()}" for v in variants)
        + (" (interleaved per client count and repetition)" if len(variants) > 1 else ""))
    return t


# (label, getter, digits, best is max?)
_SUMMARY_ROWS: list[tuple[str, Callable[[Group], Spread | None], int, bool]] = [
    ("TPS", lambda g: g.tps, 2, True),
    ("Avg Latency (ms)", lambda g: g.lat_avg, 3, False),
    ("Latency StdDev (ms)", lambda g: g.lat_stddev, 3, False),
    ("p50 (ms)", lambda g: g.p50, 3, False),
    ("p95 (ms)", lambda g: g.p95, 3, False),
    ("p99 (ms)", lambda g: g.p99, 3, False),
    ("Max (ms)", lambda g: g.lat_max, 3, False),
    ("Transactions", lambda g: g.transactions, 0, True),
]


WIDE = 7  # more client counts than this: one row per client count instead of one column


def _matrix(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """Metrics as rows and client counts as columns (the article's layout) while it
    fits; transposed when the sweep has many client counts."""
    if len(header) - 1 > WIDE + 1:
        header, rows = [header[0].replace("Metric", "Step"), *[r[0] for r in rows]], \
            [[header[i], *[r[i] for r in rows]] for i in range(1, len(header))]
    t = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    for i, h in enumerate(header):
        t.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*r)
    return t


def data_summary(view: RunView, variant: str) -> Table:
    groups = [g for g in view.groups if g.variant == variant]
    title = "Data Summary" + (f" — {variant}" if len(view.variants()) > 1 else "")
    base = groups[0] if groups else None
    header = ["Metric", *[g.label + ("*" if g.noisy else "") for g in groups], "Best"]
    rows: list[list[str]] = []
    for label, get, digits, best_max in _SUMMARY_ROWS:
        figs = [get(g) for g in groups]
        cells = [_cell(f, get(base) if base else None, digits, show_pct=True) for f in figs]
        valid = [(f.value, g) for f, g in zip(figs, groups, strict=True) if f is not None]
        best = (max if best_max else min)(valid, key=lambda x: x[0])[1].label if valid else "-"
        rows.append([label, *cells, "▲ " + best if valid else "-"])
    lags = [[s.lag_avg_ms for s in g.done if s.lag_avg_ms is not None] for g in groups]
    if any(lags):
        for label, attr in (("Schedule lag avg (ms)", "lag_avg_ms"), ("Schedule lag p99 (ms)", "lag_p99_ms")):
            figs = [Spread.of([v for s in g.done if (v := getattr(s, attr)) is not None]) for g in groups]
            rows.append([label, *[_fmt(f.value if f else None, 3) for f in figs], ""])
    if any(g.tps is not None and g.tps.n > 1 for g in groups):
        rows.append(["TPS min..max", *[f"{g.tps.lo:,.0f}..{g.tps.hi:,.0f}" if g.tps else "-" for g in groups], ""])
        rows.append(["TPS spread %", *[f"{g.tps_spread_pct:.1f}" + (" noisy" if g.noisy else "") if g.tps else "-"
                                       for g in groups], f"> {groups[0].noise_pct:g}% = noisy"])
        for label, get in (("Avg Latency min..max", lambda g: g.lat_avg), ("p99 min..max", lambda g: g.p99)):
            figs = [get(g) for g in groups]
            rows.append([label, *[f"{f.lo:,.3f}..{f.hi:,.3f}" if f else "-" for f in figs], ""])
    rows.append(["Failed / Retried", *[f"{g.failed} / {g.retried}" for g in groups], ""])
    return _matrix(title, header, rows)


def _ratio_cell(r: Ratio | None) -> str:
    if r is None:
        return ""
    if r.lo is None or r.hi is None:
        return f"×{r.value:.2f} (1 rep)"
    return f"×{r.value:.2f} [{r.lo:.2f}..{r.hi:.2f}]"


def _spread(f: Spread | None, digits: int) -> str:
    if f is None:
        return "-"
    if f.n < 2:
        return _fmt(f.value, digits)
    return f"{_fmt(f.value, digits)} ({_fmt(f.lo, digits)}..{_fmt(f.hi, digits)})"


def variant_comparison(view: RunView) -> Table | None:
    """The variants side by side per client count: TPS and latency with their spread over the
    repetitions, and the ratios to the first variant from the paired repetitions, with their
    95% intervals."""
    variants = view.variants()
    if len(variants) < 2:
        return None
    first = variants[0]
    how = "best of the repetitions" if view.summary == BEST else "medians"
    t = Table(title=f"Variants side by side ({how}, (min..max) over the repetitions; ratios to {first} from "
                    "paired repetitions, [95% interval])", box=box.SIMPLE_HEAVY, title_justify="left")
    pooled = any(g.pooler is not None for g in view.groups)
    failures = any(g.failed for g in view.groups)
    for i, h in enumerate(("Clients", "Variant", "TPS", "Avg Latency (ms)", "StdDev (ms)", "p99 (ms)")
                          + (("Failed",) if failures else ())
                          + (f"TPS vs {first}", f"Latency vs {first}", "TPS difference")
                          + (("Pooler: sv_active · waiting · wait ms",) if pooled else ())):
        t.add_column(h, justify="left" if i < 2 else "right", overflow="fold" if i == 1 else "ellipsis")
    last = None
    for row in comparison_rows(view):
        g = row.group
        if last is not None and g.clients != last:
            t.add_section()
        r = row.tps_ratio
        noise = "" if r is None else {True: "beyond noise", False: "within noise", None: "unknown"}[r.beyond_noise]
        t.add_row(f"c{g.clients}" if g.clients != last else "", g.variant + ("*" if g.noisy else ""),
                  _spread(g.tps, 0 if (g.tps and g.tps.value >= 100) else 2), _spread(g.lat_avg, 3),
                  _fmt(g.lat_stddev.value if g.lat_stddev else None, 3), _fmt(g.p99.value if g.p99 else None, 3),
                  *((f"{g.failed:,}",) if failures else ()), _ratio_cell(r), _ratio_cell(row.latency_ratio), noise,
                  *((_pooler_cell(g),) if pooled else ()))
        last = g.clients
    return t


def headlines(view: RunView) -> list[str]:
    """One sentence per variant against the first: the largest TPS ratio, its interval, and
    where each reaches 95% of its best TPS."""
    variants = view.variants()
    if len(variants) < 2:
        return []
    first = variants[0]

    def curve(v: str) -> list[tuple[int, float]]:
        return [(g.clients, g.tps.value) for g in view.groups if g.variant == v and g.tps is not None]

    base_groups = {g.clients: g for g in view.groups if g.variant == first}
    out = []
    for v in variants[1:]:
        ratios = []
        for g in view.groups:
            b = base_groups.get(g.clients)
            if g.variant == v and b is not None and (r := paired_ratio(b.done, g.done)) is not None:
                ratios.append((g.clients, r))
        several = len(curve(v)) > 1  # with one client count, where it saturates says nothing
        out.append(headline(v, first, ratios, saturation_point(curve(v)) if several else None,
                            saturation_point(curve(first)) if several else None))
    return out


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
                cells.append(f"{_fmt(sr.lat_avg.value)} / {_fmt(sr.p95.value if sr.p95 else None)} / "
                             f"{_fmt(sr.p99.value if sr.p99 else None)}"
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
    out = [[label, *[_fmt(get(g), digits) for g in groups]] for label, get, digits in rows]
    out.append(["pgbench threads", *[str(g.threads) for g in groups]])
    return _matrix(title, ["Metric", *[g.label for g in groups]], out)


def pooler_table(view: RunView, variant: str) -> Table | None:
    """The pooler's own view per client count: clients active and waiting in it, server
    connections it holds, how long clients waited, its transaction time and CPU, and the
    server backends pg_stat_activity saw, beside AAS."""
    groups = [g for g in view.groups if g.variant == variant and g.pooler is not None]
    if not groups:
        return None
    p0 = groups[0].pooler
    assert p0 is not None
    what = (f"managed pgbouncer, {p0.mode} mode, pool {p0.pool_size}" if p0.kind == "managed"
            else "your pooler (SHOW POOLS / SHOW STATS of its console)")
    title = f"Pooler — {variant}: {what}; means over the bench phase, medians over repetitions"

    def fig(f: Spread | None, digits: int = 1) -> str:
        return _fmt(f.value if f else None, digits)

    rows: list[list[str]] = [
        ["Clients active (cl_active)", *[fig(g.pooler.cl_active) for g in groups if g.pooler]],
        ["Clients waiting (cl_waiting) mean", *[fig(g.pooler.cl_waiting) for g in groups if g.pooler]],
        ["Clients waiting, peak", *[fig(g.pooler.cl_waiting_peak, 0) for g in groups if g.pooler]],
        ["Server conns active (sv_active) mean", *[fig(g.pooler.sv_active) for g in groups if g.pooler]],
        ["Server conns active, peak", *[fig(g.pooler.sv_active_peak, 0) for g in groups if g.pooler]],
        ["Server conns idle (sv_idle) mean", *[fig(g.pooler.sv_idle) for g in groups if g.pooler]],
        ["Longest wait (maxwait), peak ms", *[fig(g.pooler.maxwait_ms_peak) for g in groups if g.pooler]],
        ["Client wait per transaction (ms)", *[fig(g.pooler.wait_ms_per_txn, 3) for g in groups if g.pooler]],
        ["Transaction time at the pooler (ms)", *[fig(g.pooler.xact_ms, 3) for g in groups if g.pooler]],
        ["  of it on a server connection (ms)", *[fig(g.pooler.server_ms, 3) for g in groups if g.pooler]],
        ["Server backends (pg_stat_activity)", *[fig(g.pooler.server_backends) for g in groups if g.pooler]],
        ["Server AAS (pg_stat_activity)", *[_fmt(total_aas(g.waits) if g.snapshots else None, 2)
                                             for g in groups]],
        ["pgbouncer CPU % of one core, mean", *[fig(g.pooler.cpu, 0) for g in groups if g.pooler]],
        ["pgbouncer CPU %, peak", *[fig(g.pooler.cpu_peak, 0) for g in groups if g.pooler]],
    ]
    return _matrix(title, ["Metric", *[g.label for g in groups]], rows)


def idle_memory_table(view: RunView) -> Table | None:
    """Articles 003 and 004's view: per client count, each variant's idle sessions, TPS and
    its change against the first variant, p99, the machine's available memory and what the
    server's processes hold (proportional set size), per idle backend, and the reads."""
    if not any(g.memory is not None and (g.memory.idle or g.memory.max_connections) for g in view.groups):
        return None
    variants = view.variants()
    first = variants[0]
    t = Table(title=f"Idle sessions and memory (medians; memory at the end of the bench phase, idle sessions still "
                    f"open; TPS change vs {first}; Δ avail: how far MemAvailable fell while they were open; "
                    "PSS: proportional set size, all server processes and per idle backend)",
              box=box.SIMPLE_HEAVY, title_justify="left")
    restarts = any(g.memory is not None and g.memory.max_connections for g in view.groups)
    t.add_column("Clients")
    t.add_column("Variant", overflow="fold")
    for h in ("Idle", *(("max_conn",) if restarts else ()), "TPS", "TPS change", "p99 (ms)", "Avail (MB)",
              "Δ avail (MB)", "PSS (MB)", "PSS/idle (MB)", "Reads/s", "Hit %"):
        t.add_column(h, justify="right")
    by = {(g.variant, g.clients): g for g in view.groups}
    last = None
    for g in view.groups if len(variants) == 1 else [by[(v, c)] for c in dict.fromkeys(x.clients for x in view.groups)
                                                     for v in variants if (v, c) in by]:
        m, base = g.memory, by.get((first, g.clients))
        if last is not None and g.clients != last:
            t.add_section()
        pct = ""
        if base is not None and base is not g and g.tps and base.tps:
            p = pct_change(g.tps.value, base.tps.value)
            pct = f"{p:+.1f}%" if p is not None else ""

        def f(x: Spread | None, digits: int = 0) -> str:
            return _fmt(x.value if x else None, digits)

        t.add_row(f"c{g.clients}" if g.clients != last else "", g.variant,
                  f"{m.idle} {m.idle_kind}" if m and m.idle else "0",
                  *((f"{m.max_connections:.0f}" if m and m.max_connections else "",) if restarts else ()),
                  f(g.tps), pct, f(g.p99, 3), f(m.available_mb) if m else "-",
                  f(m.available_drop_mb) if m and m.idle else "", f(m.server_pss_mb) if m else "-",
                  f(m.idle_backend_pss_mb, 2) if m and m.idle else "", f(m.blks_read_per_s) if m else "-",
                  f(m.hit_pct, 2) if m else "-")
        last = g.clients
    return t


def _pooler_cell(g: Group) -> str:
    p = g.pooler
    if p is None:
        return ""
    if p.sv_active is None:
        return "no console"
    wait = f" · {p.wait_ms_per_txn.value:.2f}" if p.wait_ms_per_txn else ""
    return f"{p.sv_active.value:.1f} · {p.cl_waiting.value if p.cl_waiting else 0:.1f}{wait}"


def wait_table(title: str, rows: Sequence[WaitRow], snapshots: int, bg: Sequence[WaitRow] = ()) -> Table:
    total = total_aas(rows)
    t = Table(title=f"{title}: {snapshots} snapshots, total AAS {total:.2f}", box=box.SIMPLE, title_justify="left")
    t.add_column("Wait Type")
    t.add_column("Wait Event")
    t.add_column("Count", justify="right")
    t.add_column("AAS", justify="right")
    t.add_column("±", justify="right")
    for r in rows[:MAX_WAIT_ROWS]:
        t.add_row(r.wait_event_type, r.wait_event, str(r.count), f"{r.aas:.2f}",
                  f"{r.aas * relative_error(r):.2f}")
    if len(rows) > MAX_WAIT_ROWS:
        t.add_row("…", f"{len(rows) - MAX_WAIT_ROWS} more", "", "", "")
    if not rows:
        t.add_row("-", "no active sessions sampled", "0", "0.00", "")
    if bg:
        t.add_section()
        for r in bg[:5]:
            t.add_row(f"(bg) {r.wait_event_type}", r.wait_event, str(r.count), f"{r.aas:.2f}",
                      f"{r.aas * relative_error(r):.2f}")
    return t


WAIT_NOTE = ("AAS = occurrences / all snapshots of the phase (empty ones included), so the events add up to the "
             "total; ± is the 1σ sampling error. (bg) rows are background processes, not counted in the total.")


def checks_table(view: RunView) -> Table:
    t = Table(title="Checks (which numbers to trust)", box=box.SIMPLE, title_justify="left")
    t.add_column("Step")
    columns = met(c for g in view.groups for _, cs in g.checks for c in cs)
    for check in columns:
        t.add_column(check)
    for g in view.groups:
        for rep, cs in g.checks:
            by = {c.id: c for c in cs}
            t.add_row(f"{g.label}{'' if len(view.variants()) == 1 else ' ' + g.variant} r{rep}",
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


def summary_note(view: RunView, base: str) -> str:
    """How to read a Data Summary."""
    how = ("the best of the repetitions (the one with the highest TPS, as article 002 reports)"
           if view.summary == BEST else "medians of the repetitions")
    return (f"% vs baseline {base}; figures are {how}; latency measured per transaction from pgbench's log; "
            "* = noisy step")


def run_report(view: RunView, *, waits: bool = True) -> list[RenderableType]:
    items: list[RenderableType] = [header(view), Text("")]
    for variant in view.variants():
        items.append(data_summary(view, variant))
        base = next((g for g in view.groups if g.variant == variant), None)
        if base is not None:
            items.append(Text(summary_note(view, base.label), style="dim"))
        st = scripts_table(view, variant)
        if st is not None:
            items.append(st)
        pt = pooler_table(view, variant)
        if pt is not None:
            items.append(pt)
        items.append(system_table(view, variant))
        if waits:
            items.append(Text(WAIT_NOTE, style="dim"))
            for g in view.groups:
                if g.variant == variant and g.done:
                    items.append(wait_table(f"Wait profile {g.label}" +
                                            (f" {variant}" if len(view.variants()) > 1 else "") +
                                            " (client backends, bench phase)", g.waits, g.snapshots, g.waits_bg))
    idle = idle_memory_table(view)
    if idle is not None:
        items[2:2] = [idle]
    comparison = variant_comparison(view)
    if comparison is not None:
        items[2:2] = [comparison, *[Text("▶ " + h) for h in headlines(view)]]
    items.append(checks_table(view))
    money = view.data.env.get(Env.CHECK_MONEY)
    if money:
        items.append(Text(("✓ " if view.data.env.get(Env.CHECK_MONEY_OK) == "true" else "✗ ") + money))
    if view.warnings:
        items.append(Text("\nWarnings:", style="bold"))
        for w in view.warnings:
            items.append(Text(f"  ! {w}"))
    return items


def recommendation_items(r: Recommendation) -> list[RenderableType]:
    """A recommendation as the terminal shows it: the headline, the model's figures, the reasons."""
    items: list[RenderableType] = [Text("▶ " + r.headline(), style="bold")]
    t = Table(box=box.SIMPLE, show_header=False)
    t.add_column("what")
    t.add_column("value")
    f = r.fit
    if f is not None:
        p = f.params
        t.add_row("model", f"Universal Scalability Law on {r.concurrency}, {f.points} measurements, R² {f.r2:.3f}, "
                           f"intervals by bootstrap over {f.method}")
        t.add_row("σ contention", f"{p.sigma:.4f} [{f.sigma.lo:.4f}..{f.sigma.hi:.4f}]")
        t.add_row("κ coherency", f"{p.kappa:.6f} [{f.kappa.lo:.6f}..{f.kappa.hi:.6f}]")
        peak = "not identified" if not f.identified else f"{p.peak_n:.1f} [{f.peak_n.lo:.1f}..{f.peak_n.hi:.1f}]"
        t.add_row("modelled peak N*", peak)
        if math.isfinite(f.peak_x.hi):
            t.add_row("modelled peak TPS" if f.identified else "modelled ceiling TPS",
                      f"{p.peak_x:,.0f} [{f.peak_x.lo:,.0f}..{f.peak_x.hi:,.0f}]")
        if r.modelled_n is not None:
            t.add_row(f"model reaches {r.fraction:.0%} at", f"{r.modelled_n:.1f}")
    if r.knee is not None:
        t.add_row("knee of the measured curve", str(r.knee))
    t.add_row("rule of thumb (cores x 2) + spindles", f"{r.heuristic} ({r.cores} cores, {r.spindles} spindles)")
    if r.checks:
        t.add_row("checks", "; ".join(f"{name} {ok} ok" + (f", {warn} WARN" if warn else "")
                                      for name, (ok, warn) in r.checks.items()))
    items.append(t)
    if r.reasons:
        items.append(Text("Why:\n" + "\n".join(f"  - {x}" for x in r.reasons)))
    return items


def runs_table(rows: Sequence[tuple[str, str, str, str, str, str, str]]) -> Table:
    t = Table(box=box.SIMPLE, title="Runs", title_justify="left")
    for c in ("Run", "Created (UTC)", "Status", "Workload", "Target", "Steps", "Best TPS"):
        t.add_column(c, justify="right" if c in ("Steps", "Best TPS") else "left")
    for r in rows:
        t.add_row(*r)
    return t
