"""The report's charts, drawn with matplotlib from an analysed run: SVG for the HTML report
(inlined, so the file needs no network), PNG or SVG files for the markdown one. Each chart
kind is one function; what they share is report/plotting.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.ticker import FuncFormatter

from pgknee.analyze.recommend import Recommendation, measured_points
from pgknee.analyze.usl import band, fitted_curve
from pgknee.analyze.view import RunView
from pgknee.analyze.waits import stack
from pgknee.model.keys import Env
from pgknee.report.plotting import (
    STYLE,
    Chart,
    categorical_axis,
    client_axis,
    client_cpus_of,
    colour_of,
    cpus_of,
    groups_of,
    key_of,
    measured,
    new_figure,
    shade,
    spread_band,
    tip_text,
    title_suffix,
)
from pgknee.report.servercharts import server_cpu

# wait event classes, coloured by type so the same type keeps its hue across charts
WAIT_COLOURS = {"CPU": "#2ca02c", "LWLock": "#ff7f0e", "IO": "#1f77b4", "Lock": "#d62728", "Client": "#9467bd",
                "IPC": "#8c564b", "BufferPin": "#e377c2", "Timeout": "#bcbd22", "Activity": "#17becf",
                "Extension": "#7f7f7f"}
CPU_PARTS = (("user", "#1f77b4"), ("system", "#d62728"), ("nice", "#9467bd"), ("iowait", "#ff7f0e"),
             ("irq, softirq, steal", "#7f7f7f"))
MAX_WAIT_EVENTS = 8


def throughput_latency(view: RunView, missing: dict[str, list[int]]) -> Chart:
    fig, (top, bottom) = new_figure(2, 1, size=(9.0, 6.4), sharex=True)
    chart = Chart("throughput-latency", "throughput-latency", "Throughput and latency against clients",
                  "Throughput should rise with clients and then flatten; past that point more connections only "
                  "queue, and p95/p99 climb while TPS does not. Bands: min..max over the repetitions.", fig)
    if any(s.rate for s in view.data.steps):
        chart.caption += " An open-loop variant (--rate) runs at its schedule: its TPS is the rate; read its latency."
    counts: list[int] = []
    for v in view.variants():
        groups, colour = groups_of(view, v), colour_of(view, v)
        counts += [g.clients for g in groups] + missing.get(v, [])
        xs, figs = measured(groups, lambda g: g.tps)
        if figs:
            chart.mark(top.plot(xs, [f.value for f in figs], "o-", color=colour, label=v)[0], len(figs),
                       tip_text(f"{v}, TPS", xs, figs, 0))
            spread_band(top, xs, figs, colour)
        for get, style, name in ((lambda g: g.lat_avg, "o-", "mean"), (lambda g: g.p95, "s--", "p95"),
                                 (lambda g: g.p99, "^:", "p99")):
            xs, figs = measured(groups, get)
            if figs:
                chart.mark(bottom.plot(xs, [f.value for f in figs], style, color=colour, markersize=4)[0], len(figs),
                           tip_text(f"{v}, {name} latency (ms)", xs, figs, 3))
                if style == "o-":
                    spread_band(bottom, xs, figs, colour)
        lost = [g.clients for g in groups if not g.done] + missing.get(v, [])
        if lost:
            top.plot(lost, [0] * len(lost), "x", color=colour, markersize=10, mew=2.5,
                     label=f"{v}: failed or not run", clip_on=False)
    top.set_ylabel("TPS (transactions/s)")
    top.set_ylim(bottom=0)
    top.legend(loc="best")
    bottom.set_yscale("log")
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bottom.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
    bottom.set_ylabel("latency (ms, log scale)")
    bottom.plot([], [], "o-", color="#555", label="mean")
    bottom.plot([], [], "s--", color="#555", label="p95")
    bottom.plot([], [], "^:", color="#555", label="p99")
    bottom.legend(loc="best")
    client_axis(bottom, counts)
    return chart


def tps_stddev(view: RunView) -> Chart | None:
    fig, (ax,) = new_figure(size=(9.0, 4.6))
    chart = Chart("tps-stddev", "tps-stddev", "Throughput against latency standard deviation",
                  "Up and to the left is better. A step that adds little TPS but moves far to the right buys "
                  "throughput with unstable response times (article 000's trade-off).", fig)
    for v in view.variants():
        pts = [(g.lat_stddev.value, g.tps.value, g.clients) for g in groups_of(view, v) if g.tps and g.lat_stddev]
        if not pts:
            continue
        colour = colour_of(view, v)
        chart.mark(ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colour, label=v)[0], len(pts),
                   f"{v}: " + "; ".join(f"c{c} {y:,.0f} TPS at stddev {x:.2f} ms" for x, y, c in pts))
        for x, y, c in pts:
            ax.annotate(f"c{c}", (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8, color=colour)
    if not chart.points:
        return None
    ax.set_xlabel("latency standard deviation (ms)")
    ax.set_ylabel("TPS (transactions/s)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    return chart


def scalability(view: RunView, rec: Recommendation) -> Chart | None:
    f = rec.fit
    if f is None:
        return None
    p = f.params
    fig, (ax,) = new_figure(size=(9.0, 4.6))
    chart = Chart(key_of("scalability", view, rec.variant), "scalability",
                  "Scalability model" + title_suffix(view, rec.variant),
                  rec.headline(), fig)
    colour = colour_of(view, rec.variant)
    pts = measured_points(view, rec.variant)
    top = f.max_n * 1.5
    if f.identified and math.isfinite(f.peak_n.hi):
        top = max(top, min(f.peak_n.hi, 4 * f.max_n) * 1.1)
    grid = np.linspace(1.0, top, 300)
    fits = band(f, grid)
    if fits is not None:
        ax.fill_between(grid, fits[0], fits[1], color=colour, alpha=0.15, linewidth=0,
                        label="95% band (bootstrap fits)")
    chart.mark(ax.plot(grid, fitted_curve(p, grid), "-", color=colour,
                       label=f"USL fit: σ {p.sigma:.3f}, κ {p.kappa:.5f}, R² {f.r2:.2f}")[0], 0)
    chart.mark(ax.plot([x for x, _ in pts], [y for _, y in pts], "o", color="#222", markersize=4,
                       label="measured (each repetition)")[0], len(pts))
    if f.identified:
        ax.axvspan(f.peak_n.lo, min(f.peak_n.hi, top), color="#999", alpha=0.15,
                   label=f"modelled peak N* {p.peak_n:.1f} [{f.peak_n.lo:.1f}..{f.peak_n.hi:.1f}]")
    elif math.isfinite(p.peak_x):  # no peak identified: the level the model approaches (λ/σ when κ is 0)
        ax.axhline(p.peak_x, color="#999", linestyle="--", label=f"modelled ceiling {p.peak_x:,.0f} TPS")
    _answer_marks(ax, rec)
    if rec.knee is not None:
        ax.axvline(rec.knee, color="#9467bd", linestyle="-.", linewidth=1, label=f"knee (Kneedle): {rec.knee}")
    if rec.heuristic is not None:
        ax.axvline(rec.heuristic, color="#7f7f7f", linestyle=":", linewidth=1.2,
                   label=f"(server cores × 2) + spindles = {rec.heuristic}")
    ax.set_xlim(0, top)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(rec.concurrency + " (database-side concurrency)")
    ax.set_ylabel("TPS (transactions/s)")
    ax.legend(loc="lower right")
    return chart


def _answer_marks(ax: Any, rec: Recommendation) -> None:
    """The answer on the scalability chart: the count, its 95% interval, and the level it was read
    against (the plateau's, or the peak's)."""
    if rec.connections is None:
        return
    ax.axvline(rec.connections, color="#2ca02c", linewidth=2.2, label=f"recommended: {rec.connections}")
    if rec.counts_interval is not None and rec.counts_interval[0] != rec.counts_interval[1]:
        ax.axvspan(*rec.counts_interval, color="#2ca02c", alpha=0.10,
                   label="95% interval: {}..{}".format(*rec.counts_interval))
    if rec.level_tps is not None and rec.verdict in ("levels-off", "peaks", "saturated"):
        what = {"levels-off": "plateau", "peaks": "peak"}.get(rec.verdict, "best so far")
        ax.axhline(rec.level_tps, color="#2ca02c", linestyle="--", linewidth=1,
                   label=f"{what} {rec.level_tps:,.0f} TPS ({rec.fraction:.0%}: {rec.fraction * rec.level_tps:,.0f})")


def cpu(view: RunView, variant: str) -> Chart | None:
    groups = [g for g in groups_of(view, variant) if g.system.mean_user is not None]
    if not groups:
        return None
    fig, (top, bottom) = new_figure(2, 1, size=(9.0, 5.6), sharex=True, height_ratios=[3, 2])
    local = view.data.env.get(Env.TARGET_LOCAL) == "true"
    chart = Chart(key_of("cpu", view, variant), "cpu", "CPU and load per step" + title_suffix(view, variant),
                  ("System time that grows faster than user time, and runnable processes above the CPU line, mean "
                   "the CPUs spend their time switching between too many busy connections. "
                   + ("This machine runs both server and client." if local else "The client machine only.")), fig)
    xs = list(range(len(groups)))
    bottom_of = np.zeros(len(groups))
    for (name, colour), attr in zip(CPU_PARTS, ("mean_user", "mean_system", "mean_nice", "mean_iowait", "mean_other"),
                                    strict=True):
        vals = np.array([getattr(g.system, attr) or 0.0 for g in groups])
        bars = top.bar(xs, vals, bottom=bottom_of, color=colour, label=name, width=0.6)
        chart.mark(bars, len(groups), [f"{g.label} {name} {x:.1f}%" for g, x in zip(groups, vals, strict=True)])
        bottom_of += vals
    peaks = [g.system.peak_cpu or 0.0 for g in groups]
    top.plot(xs, peaks, "_", color="#000", markersize=18, mew=2, label="peak second (total)")
    top.set_ylim(0, 100)
    top.set_ylabel("CPU, % of all CPUs\n(mean over the bench phase)")
    top.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    chart.mark(bottom.plot(xs, [g.system.peak_load1 or 0.0 for g in groups], "o-", color="#1f77b4",
                           label="load average 1m (peak)")[0], len(groups))
    chart.mark(bottom.plot(xs, [g.system.procs_running or 0.0 for g in groups], "s--", color="#ff7f0e",
                           label="runnable processes (mean)")[0], len(groups))
    cpus = client_cpus_of(view)
    if cpus:
        bottom.axhline(cpus, color="#d62728", linestyle=":", linewidth=1.5, label=f"CPUs: {cpus}")
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("processes")
    bottom.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    categorical_axis(bottom, [g.label for g in groups])
    return chart


def waits(view: RunView, variant: str) -> Chart | None:
    groups = [g for g in groups_of(view, variant) if g.snapshots]
    if not groups:
        return None
    stacked = stack([g.waits for g in groups], MAX_WAIT_EVENTS)
    fig, (ax,) = new_figure(size=(9.0, 4.6))
    chart = Chart(key_of("waits", view, variant), "waits",
                  "Average Active Sessions by wait event" + title_suffix(view, variant),
                  "Each bar is how many sessions were active on average, split by what they waited on. A single "
                  "event above the CPU line is the bottleneck; CPU:running near the line means the CPUs are "
                  "saturated; Client:ClientRead means the sessions waited on the client.", fig)
    xs = list(range(len(groups)))
    base = np.zeros(len(groups))
    shades: dict[str, int] = {}
    for (wtype, event), aas in zip(stacked.events, stacked.aas, strict=True):
        vals = np.array(aas)
        colour = shade(WAIT_COLOURS.get(wtype, "#7f7f7f"), shades.setdefault(wtype, 0))
        shades[wtype] += 1
        chart.mark(ax.bar(xs, vals, bottom=base, color=colour, width=0.6, label=f"{wtype}:{event}"), len(groups),
                   [f"{g.label} {wtype}:{event} AAS {x:.2f}" for g, x in zip(groups, vals, strict=True)])
        base += vals
    rest = np.array(stacked.rest)
    if rest.any():
        ax.bar(xs, rest, bottom=base, color="#cccccc", width=0.6, label="other events")
        base += rest
    for x, total in zip(xs, base, strict=True):
        ax.annotate(f"{total:.2f}", (x, total), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    cpus = cpus_of(view)
    if cpus:
        ax.axhline(cpus, color="#d62728", linestyle=":", linewidth=1.5, label=f"server CPUs: {cpus}")
    ax.set_ylabel("Average Active Sessions")
    ax.set_ylim(0, max(float(base.max()), cpus or 0) * 1.15 or 1)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
    categorical_axis(ax, [g.label for g in groups])
    return chart


TIMELINE_POINTS = 6000  # drawn over all steps at most (a 9-inch chart shows far fewer)


def envelope(xs: Sequence[float], ys: Sequence[float], most: int) -> tuple[list[float], list[float]]:
    """A series of more than `most` points, decimated: in each of most/2 runs of consecutive
    points, its lowest and its highest, in their order; the line keeps every peak and dip."""
    if len(ys) <= most:
        return list(xs), list(ys)
    buckets = most // 2
    out_x: list[float] = []
    out_y: list[float] = []
    for b in range(buckets):
        lo, hi = b * len(ys) // buckets, (b + 1) * len(ys) // buckets
        i = min(range(lo, hi), key=ys.__getitem__)
        j = max(range(lo, hi), key=ys.__getitem__)
        for k in sorted({i, j}):
            out_x.append(xs[k])
            out_y.append(ys[k])
    return out_x, out_y


def timeline(view: RunView) -> Chart | None:
    steps = [s for s in sorted(view.data.steps, key=lambda s: s.seq)
             if s.bench_start and view.data.progress.get(s.step_id)]
    if not steps:
        return None
    t0 = steps[0].bench_start or 0.0
    fig, (ax,) = new_figure(size=(9.0, 3.8))
    chart = Chart("timeline", "timeline", "TPS over time, second by second (pgbench --progress)",
                  "Each segment is one step. A rising start is warm-up; dips, saw-teeth or a collapse are "
                  "checkpoints, vacuum or stalls. A step that is not flat is less trustworthy than its mean."
                  + (" A long run's seconds are drawn as the lowest and highest of each few: every dip and peak "
                     "stays." if sum(len(view.data.progress[s.step_id]) for s in steps) > TIMELINE_POINTS else ""),
                  fig)
    labelled: set[str] = set()
    every = max(1, math.ceil(len(steps) / 40))
    top = max(max(tps for _, tps in view.data.progress[s.step_id]) for s in steps)
    for i, s in enumerate(steps):
        prog = view.data.progress[s.step_id]
        start = (s.bench_start or t0) - t0
        xs = [start + t for t, _ in prog]
        colour = colour_of(view, s.variant) if s.variant in view.variants() else "#555"
        label = s.variant if len(view.variants()) > 1 and s.variant not in labelled else None
        labelled.add(s.variant)
        vals = [tps for _, tps in prog]
        dx, dy = envelope(xs, vals, max(TIMELINE_POINTS // len(steps), 40))
        chart.mark(ax.plot(dx, dy, "-", color=colour, linewidth=1.2, label=label)[0], len(prog),
                   f"{s.variant} c{s.clients} rep {s.rep}: mean {sum(vals) / len(vals):,.0f} TPS, "
                   f"min {min(vals):,.0f}, max {max(vals):,.0f} over {len(vals)} s")
        if s.status != "completed":
            ax.axvspan(xs[0], xs[-1], color="#d62728", alpha=0.12)
        if i % every == 0:
            ax.annotate(f"c{s.clients}", (xs[0], top), textcoords="offset points", xytext=(1, 2), fontsize=7,
                        color="#444", rotation=90 if len(steps) > 12 else 0, va="bottom")
    ax.set_ylim(0, top * (1.25 if len(steps) > 12 else 1.12))
    ax.set_xlabel("seconds since the first step started")
    ax.set_ylabel("TPS (per second)")
    if labelled and len(view.variants()) > 1:
        ax.legend(loc="lower right")
    return chart


def pooler(view: RunView) -> Chart | None:
    pooled = [v for v in view.variants() if any(g.pooler is not None for g in groups_of(view, v))]
    if not pooled:
        return None
    fig, (ax,) = new_figure(size=(9.0, 4.4))
    chart = Chart("pooler", "pooler", "Inside the pooler: server connections busy and clients waiting",
                  "sv_active pinned at the pool size while clients wait (cl_waiting) means the pool is the limit: "
                  "a bigger pool helps only while the server has idle CPU; waiting clients with spare server "
                  "connections point at the pooler itself.", fig)
    counts: list[int] = []
    for v in pooled:
        pts = [(g.clients, p, active) for g in groups_of(view, v)
               if (p := g.pooler) is not None and (active := p.sv_active) is not None]
        if not pts:
            continue
        colour = colour_of(view, v)
        xs = [c for c, _, _ in pts]
        counts += xs
        sv = [active.value for _, _, active in pts]
        cw = [p.cl_waiting.value if p.cl_waiting else 0.0 for _, p, _ in pts]
        for ys, style, what in ((sv, "o-", "sv_active"), (cw, "s--", "cl_waiting")):
            chart.mark(ax.plot(xs, ys, style, color=colour, label=f"{v}: {what} (mean)")[0], len(ys),
                       f"{v} {what}: " + "; ".join(f"c{x} {y:.1f}" for x, y in zip(xs, ys, strict=True)))
        size = pts[0][1].pool_size
        if size:
            ax.axhline(size, color=colour, linestyle=":", linewidth=1.2, label=f"{v}: pool size {size}")
    if not chart.points:
        return None
    ax.set_ylabel("connections / clients")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=7)
    client_axis(ax, counts)
    return chart


def idle_memory(view: RunView) -> Chart | None:
    variants = [v for v in view.variants() if any(g.memory is not None and g.tps for g in groups_of(view, v))]
    groups = {(g.variant, g.clients): g for v in variants for g in groups_of(view, v) if g.memory and g.tps}
    if not any(g.memory and (g.memory.idle or g.memory.max_connections) for g in groups.values()):
        return None
    counts = sorted({c for _, c in groups})
    fig, (a, b, c) = new_figure(1, 3, size=(10.5, 4.4))
    chart = Chart("idle-memory", "idle-memory", "Idle sessions: throughput and memory",
                  "Each idle session holds a backend process: memory available falls by about its PSS times the "
                  "count (hollow markers: before the idle sessions opened), and the workers' TPS shows what that "
                  "costs (articles 003 and 004).", fig)
    width = 0.8 / len(variants)
    per_idle = any(g.memory and g.memory.idle and g.memory.idle_backend_pss_mb for g in groups.values())
    for i, v in enumerate(variants):
        colour = colour_of(view, v)
        own = [(k, groups[(v, cl)]) for k, cl in enumerate(counts) if (v, cl) in groups]
        xs = [k + (i - (len(variants) - 1) / 2) * width for k, _ in own]
        tps = [g.tps for _, g in own if g.tps]
        err = [[f.value - f.lo for f in tps], [f.hi - f.value for f in tps]]
        chart.mark(a.bar(xs, [f.value for f in tps], width=width, color=colour, yerr=err, capsize=2, label=v),
                   len(tps), [f"{v} c{g.clients}: {g.tps.value:,.0f} TPS" for _, g in own if g.tps])
        mem = [(x, g.memory) for x, (_, g) in zip(xs, own, strict=True) if g.memory and g.memory.available_mb]
        if mem:
            chart.mark(b.plot([x for x, _ in mem], [m.available_mb.value for _, m in mem if m.available_mb], "o-",
                              color=colour)[0], len(mem))
            before = [(x, m.available_mb.value + m.available_drop_mb.value) for x, m in mem
                      if m.idle and m.available_mb and m.available_drop_mb]
            if before:
                b.plot([x for x, _ in before], [y for _, y in before], "o", mfc="none", color=colour)
        if per_idle:
            pss = [(x, g.memory.idle_backend_pss_mb.value) for x, (_, g) in zip(xs, own, strict=True)
                   if g.memory and g.memory.idle and g.memory.idle_backend_pss_mb]
        else:
            pss = [(x, g.memory.server_pss_mb.value) for x, (_, g) in zip(xs, own, strict=True)
                   if g.memory and g.memory.server_pss_mb]
        if pss:
            chart.mark(c.bar([x for x, _ in pss], [y for _, y in pss], width=width, color=colour), len(pss),
                       [f"{v}: {y:,.2f} MB" for _, y in pss])
    a.set_ylabel("TPS of the workers (min..max bars)")
    a.set_title("throughput")
    a.legend(loc="lower left", fontsize=7)
    b.set_ylabel("MemAvailable (MB), end of the bench phase")
    b.set_title("memory available")
    c.set_ylabel("PSS per idle backend (MB)" if per_idle else "server processes' PSS (MB)")
    c.set_title("memory per idle session" if per_idle else "server memory")
    for ax in (a, b, c):
        categorical_axis(ax, [f"c{x}" for x in counts])
    return chart


def charts_for(view: RunView, recs: Sequence[Recommendation], missing: dict[str, list[int]] | None = None
               ) -> list[Chart]:
    """Every chart the run has data for, in the report's order."""
    with matplotlib.rc_context(STYLE):  # artists take their fonts when they are made
        out: list[Chart | None] = [throughput_latency(view, missing or {}), tps_stddev(view)]
        out += [scalability(view, r) for r in recs]
        out += [cpu(view, v) for v in view.variants()]
        out += [server_cpu(view, v) for v in view.variants()]
        out += [waits(view, v) for v in view.variants()]
        out += [timeline(view), pooler(view), idle_memory(view)]
    return [c for c in out if c is not None and c.points > 0]
