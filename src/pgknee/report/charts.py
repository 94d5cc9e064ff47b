"""The report's charts, drawn with matplotlib from an analysed run: SVG for the HTML report
(inlined, so the file needs no network), PNG or SVG files for the markdown one.

Every artist that carries measured data gets an id (`data-<chart key>-<n>`), so a test can
find it in the rendered page and check it was drawn with something in it."""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from pgknee.analyze.recommend import Recommendation, concurrency_of
from pgknee.analyze.records import Group, RunView, Spread
from pgknee.analyze.usl import usl
from pgknee.keys import Env

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
# wait event classes, coloured by type so the same type keeps its hue across charts
WAIT_COLOURS = {"CPU": "#2ca02c", "LWLock": "#ff7f0e", "IO": "#1f77b4", "Lock": "#d62728", "Client": "#9467bd",
                "IPC": "#8c564b", "BufferPin": "#e377c2", "Timeout": "#bcbd22", "Activity": "#17becf",
                "Extension": "#7f7f7f"}
CPU_PARTS = (("user", "#1f77b4"), ("system", "#d62728"), ("nice", "#9467bd"), ("iowait", "#ff7f0e"),
             ("irq, softirq, steal", "#7f7f7f"))
MAX_WAIT_EVENTS = 8
STYLE: Any = {"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
         "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8, "legend.framealpha": 0.85,
         "svg.fonttype": "none", "font.family": "sans-serif", "text.parse_math": False,  # '$' is just a character
         "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"]}


@dataclass
class Chart:
    key: str  # unique within a report: the kind, or kind-N-variant for a per-variant chart (key_of)
    kind: str  # throughput-latency | tps-stddev | scalability | cpu | waits | timeline | pooler | idle-memory
    title: str
    caption: str  # what to look for
    figure: Figure
    points: int = 0  # measured values drawn
    tips: dict[str, str] = field(default_factory=dict)  # artist id -> its values, shown on hover
    marked: int = 0  # artists tagged so far

    def mark(self, artist: object, values: int, tips: str | Sequence[str] = "") -> None:
        """Tag an artist that carries data, so it can be found in the rendered SVG; `tips`: its
        values as text (one per bar for a bar chart), which the browser shows on hover."""
        gid = f"data-{self.key}-{self.marked}"
        self.marked += 1
        patches = getattr(artist, "patches", None)  # a bar chart: one rectangle per bar
        if patches is not None:
            for i, patch in enumerate(patches):
                patch.set_gid(f"{gid}-{i}")
                if not isinstance(tips, str) and i < len(tips):
                    self.tips[f"{gid}-{i}"] = tips[i]
        else:
            artist.set_gid(gid)  # type: ignore[attr-defined]
            if isinstance(tips, str) and tips:
                self.tips[gid] = tips
        self.points += values


def svg(chart: Chart) -> str:
    """The chart as an SVG document fragment, with ids of its own (several share a page)."""
    buf = io.StringIO()
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": chart.key}):
        chart.figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = _own_ids(buf.getvalue()[buf.getvalue().index("<svg"):], chart.key)
    for gid, tip in chart.tips.items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(tip)}</title>', 1)
    return text


def _own_ids(text: str, prefix: str) -> str:
    """matplotlib numbers its ids per figure (axes_1, line2d_1, ...): prefix them, and the
    references to them, with the chart's key so that charts sharing a page keep unique ids."""
    ids = {m for m in re.findall(r' id="([^"]+)"', text) if not m.startswith("data-")}
    if not ids:
        return text

    def fix(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}-{name}{m.group(3)}" if name in ids else m.group(0)

    return re.sub(r'( id="|url\(#|href="#)([^")]+)(["\)])', fix, text)


def png(chart: Chart, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        chart.figure.savefig(buf, format="png", dpi=dpi, metadata={"Software": "pgknee"})
    return buf.getvalue()


def _new(rows: int = 1, cols: int = 1, size: tuple[float, float] = (9.0, 4.2), sharex: bool = False,
         height_ratios: Sequence[float] | None = None) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex, height_ratios=height_ratios)
    return fig, [ax for row in axes for ax in row]


def _colour(view: RunView, variant: str) -> str:
    return PALETTE[view.variants().index(variant) % len(PALETTE)]


def _groups(view: RunView, variant: str) -> list[Group]:
    return sorted((g for g in view.groups if g.variant == variant), key=lambda g: g.clients)


def doubling(counts: Sequence[int]) -> bool:
    """A sweep that (roughly) doubles from step to step: drawn on a log-2 axis."""
    c = sorted(set(counts))
    return len(c) >= 3 and c[0] > 0 and all(b / a >= 1.8 for a, b in zip(c, c[1:], strict=False))


def _client_axis(ax: Axes, counts: Sequence[int], label: str = "clients") -> None:
    c = sorted(set(counts))
    if doubling(c):
        ax.set_xscale("log", base=2)
    if 0 < len(c) <= 16:
        ax.set_xticks(c, [str(x) for x in c])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def _band(ax: Axes, xs: Sequence[float], figs: Sequence[Spread], colour: str) -> None:
    if any(f.n > 1 for f in figs):
        ax.fill_between(xs, [f.lo for f in figs], [f.hi for f in figs], color=colour, alpha=0.18, linewidth=0)


def _tip(what: str, xs: Sequence[int], figs: Sequence[Spread], digits: int) -> str:
    return f"{what}: " + "; ".join(f"c{x} {f.value:,.{digits}f}" + (f" ({f.lo:,.{digits}f}..{f.hi:,.{digits}f})"
                                                                     if f.n > 1 else "")
                                   for x, f in zip(xs, figs, strict=True))


def _with(groups: Sequence[Group], get: Callable[[Group], Spread | None]) -> tuple[list[int], list[Spread]]:
    pairs = [(g.clients, f) for g in groups if (f := get(g)) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def throughput_latency(view: RunView, missing: dict[str, list[int]]) -> Chart:
    fig, (top, bottom) = _new(2, 1, size=(9.0, 6.4), sharex=True)
    chart = Chart("throughput-latency", "throughput-latency", "Throughput and latency against clients",
                  "Throughput should rise with clients and then flatten; past that point more connections only "
                  "queue, and p95/p99 climb while TPS does not. Bands: min..max over the repetitions.", fig)
    if any(s.rate for s in view.data.steps):
        chart.caption += " An open-loop variant (--rate) runs at its schedule: its TPS is the rate; read its latency."
    counts: list[int] = []
    for v in view.variants():
        groups, colour = _groups(view, v), _colour(view, v)
        counts += [g.clients for g in groups] + missing.get(v, [])
        xs, figs = _with(groups, lambda g: g.tps)
        if figs:
            chart.mark(top.plot(xs, [f.value for f in figs], "o-", color=colour, label=v)[0], len(figs),
                       _tip(f"{v}, TPS", xs, figs, 0))
            _band(top, xs, figs, colour)
        for get, style, name in ((lambda g: g.lat_avg, "o-", "mean"), (lambda g: g.p95, "s--", "p95"),
                                 (lambda g: g.p99, "^:", "p99")):
            xs, figs = _with(groups, get)
            if figs:
                chart.mark(bottom.plot(xs, [f.value for f in figs], style, color=colour, markersize=4)[0], len(figs),
                           _tip(f"{v}, {name} latency (ms)", xs, figs, 3))
                if style == "o-":
                    _band(bottom, xs, figs, colour)
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
    _client_axis(bottom, counts)
    return chart


def tps_stddev(view: RunView) -> Chart | None:
    fig, (ax,) = _new(size=(9.0, 4.6))
    chart = Chart("tps-stddev", "tps-stddev", "Throughput against latency standard deviation",
                  "Up and to the left is better. A step that adds little TPS but moves far to the right buys "
                  "throughput with unstable response times (article 000's trade-off).", fig)
    for v in view.variants():
        pts = [(g.lat_stddev.value, g.tps.value, g.clients) for g in _groups(view, v) if g.tps and g.lat_stddev]
        if not pts:
            continue
        colour = _colour(view, v)
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
    fig, (ax,) = _new(size=(9.0, 4.6))
    chart = Chart(key_of("scalability", view, rec.variant), "scalability",
                  "Scalability model" + _of(view, rec.variant),
                  rec.headline(), fig)
    colour = _colour(view, rec.variant)
    pts = [(concurrency_of(g), s.tps) for g in _groups(view, rec.variant) for s in g.done if s.tps]
    top = f.max_n * 1.5
    if f.identified and math.isfinite(f.peak_n.hi):
        top = max(top, min(f.peak_n.hi, 4 * f.max_n) * 1.1)
    grid = np.linspace(1.0, top, 300)
    curves = np.array([usl(grid, s.lam, s.sigma, s.kappa) for s in f.samples]) if f.samples else None
    if curves is not None and len(curves) >= 20:
        ax.fill_between(grid, np.percentile(curves, 2.5, axis=0), np.percentile(curves, 97.5, axis=0),
                        color=colour, alpha=0.15, linewidth=0, label="95% band (bootstrap fits)")
    chart.mark(ax.plot(grid, usl(grid, p.lam, p.sigma, p.kappa), "-", color=colour,
                       label=f"USL fit: σ {p.sigma:.3f}, κ {p.kappa:.5f}, R² {f.r2:.2f}")[0], 0)
    chart.mark(ax.plot([x for x, _ in pts], [y for _, y in pts], "o", color="#222", markersize=4,
                       label="measured (each repetition)")[0], len(pts))
    if f.identified:
        ax.axvspan(f.peak_n.lo, min(f.peak_n.hi, top), color="#999", alpha=0.15,
                   label=f"modelled peak N* {p.peak_n:.1f} [{f.peak_n.lo:.1f}..{f.peak_n.hi:.1f}]")
    elif math.isfinite(p.peak_x):  # no peak identified: the level the model approaches (λ/σ when κ is 0)
        ax.axhline(p.peak_x, color="#999", linestyle="--", label=f"modelled ceiling {p.peak_x:,.0f} TPS")
    if rec.connections is not None:
        ax.axvline(rec.connections, color="#2ca02c", linewidth=2.2, label=f"recommended: {rec.connections}")
    if rec.knee is not None:
        ax.axvline(rec.knee, color="#9467bd", linestyle="-.", linewidth=1, label=f"knee of the curve: {rec.knee}")
    ax.axvline(rec.heuristic, color="#7f7f7f", linestyle=":", linewidth=1.2,
               label=f"(cores × 2) + spindles = {rec.heuristic}")
    ax.set_xlim(0, top)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(rec.concurrency + " (database-side concurrency)")
    ax.set_ylabel("TPS (transactions/s)")
    ax.legend(loc="lower right")
    return chart


def key_of(kind: str, view: RunView, variant: str) -> str:
    """A per-variant chart's key: unique by the variant's position, readable by its name."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in variant).strip("-").lower()[:40]
    return f"{kind}-{view.variants().index(variant) + 1}" + (f"-{slug}" if slug else "")


def _categorical(ax: Axes, labels: Sequence[str], xlabel: str = "clients") -> None:
    ax.set_xticks(range(len(labels)), labels)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", visible=False)


def _cpus(view: RunView) -> int | None:
    try:
        return int(view.data.env.get(Env.HOST_CPUS, ""))
    except ValueError:
        return None


def cpu(view: RunView, variant: str) -> Chart | None:
    groups = [g for g in _groups(view, variant) if g.system.mean_user is not None]
    if not groups:
        return None
    fig, (top, bottom) = _new(2, 1, size=(9.0, 5.6), sharex=True, height_ratios=[3, 2])
    local = view.data.env.get(Env.TARGET_LOCAL) == "true"
    chart = Chart(key_of("cpu", view, variant), "cpu", "CPU and load per step" + _of(view, variant),
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
    cpus = _cpus(view)
    if cpus:
        bottom.axhline(cpus, color="#d62728", linestyle=":", linewidth=1.5, label=f"CPUs: {cpus}")
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("processes")
    bottom.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    _categorical(bottom, [g.label for g in groups])
    return chart


def _of(view: RunView, variant: str) -> str:
    return f" — {variant}" if len(view.variants()) > 1 else ""


def waits(view: RunView, variant: str) -> Chart | None:
    groups = [g for g in _groups(view, variant) if g.snapshots]
    if not groups:
        return None
    totals: dict[tuple[str, str], float] = {}
    for g in groups:
        for w in g.waits:
            totals[(w.wait_event_type, w.wait_event)] = totals.get((w.wait_event_type, w.wait_event), 0.0) + w.aas
    events = sorted(totals, key=lambda k: -totals[k])[:MAX_WAIT_EVENTS]
    fig, (ax,) = _new(size=(9.0, 4.6))
    chart = Chart(key_of("waits", view, variant), "waits", "Average Active Sessions by wait event" + _of(view, variant),
                  "Each bar is how many sessions were active on average, split by what they waited on. A single "
                  "event above the CPU line is the bottleneck; CPU:running near the line means the CPUs are "
                  "saturated; Client:ClientRead means the sessions waited on the client.", fig)
    xs = list(range(len(groups)))
    base = np.zeros(len(groups))
    shade: dict[str, int] = {}
    for wtype, event in events:
        vals = np.array([sum(w.aas for w in g.waits if (w.wait_event_type, w.wait_event) == (wtype, event))
                         for g in groups])
        colour = _shade(WAIT_COLOURS.get(wtype, "#7f7f7f"), shade.setdefault(wtype, 0))
        shade[wtype] += 1
        chart.mark(ax.bar(xs, vals, bottom=base, color=colour, width=0.6, label=f"{wtype}:{event}"), len(groups),
                   [f"{g.label} {wtype}:{event} AAS {x:.2f}" for g, x in zip(groups, vals, strict=True)])
        base += vals
    rest = np.array([sum(w.aas for w in g.waits if (w.wait_event_type, w.wait_event) not in events) for g in groups])
    if rest.any():
        ax.bar(xs, rest, bottom=base, color="#cccccc", width=0.6, label="other events")
        base += rest
    for x, total in zip(xs, base, strict=True):
        ax.annotate(f"{total:.2f}", (x, total), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    cpus = _cpus(view)
    if cpus:
        ax.axhline(cpus, color="#d62728", linestyle=":", linewidth=1.5, label=f"CPUs: {cpus}")
    ax.set_ylabel("Average Active Sessions")
    ax.set_ylim(0, max(float(base.max()), cpus or 0) * 1.15 or 1)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
    _categorical(ax, [g.label for g in groups])
    return chart


def _shade(hexcolour: str, i: int) -> str:
    """The i-th lighter shade of a colour, for several events of one wait type."""
    r, g, b = (int(hexcolour[k:k + 2], 16) for k in (1, 3, 5))
    f = min(0.6, 0.22 * i)
    return "#{:02x}{:02x}{:02x}".format(*(int(c + (255 - c) * f) for c in (r, g, b)))


def timeline(view: RunView) -> Chart | None:
    steps = [s for s in sorted(view.data.steps, key=lambda s: s.seq)
             if s.bench_start and view.data.progress.get(s.step_id)]
    if not steps:
        return None
    t0 = steps[0].bench_start or 0.0
    fig, (ax,) = _new(size=(9.0, 3.8))
    chart = Chart("timeline", "timeline", "TPS over time, second by second (pgbench --progress)",
                  "Each segment is one step. A rising start is warm-up; dips, saw-teeth or a collapse are "
                  "checkpoints, vacuum or stalls. A step that is not flat is less trustworthy than its mean.", fig)
    labelled: set[str] = set()
    every = max(1, math.ceil(len(steps) / 40))
    top = max(max(tps for _, tps in view.data.progress[s.step_id]) for s in steps)
    for i, s in enumerate(steps):
        prog = view.data.progress[s.step_id]
        start = (s.bench_start or t0) - t0
        xs = [start + t for t, _ in prog]
        colour = _colour(view, s.variant) if s.variant in view.variants() else "#555"
        label = s.variant if len(view.variants()) > 1 and s.variant not in labelled else None
        labelled.add(s.variant)
        vals = [tps for _, tps in prog]
        chart.mark(ax.plot(xs, vals, "-", color=colour, linewidth=1.2, label=label)[0], len(prog),
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
    pooled = [v for v in view.variants() if any(g.pooler is not None for g in _groups(view, v))]
    if not pooled:
        return None
    fig, (ax,) = _new(size=(9.0, 4.4))
    chart = Chart("pooler", "pooler", "Inside the pooler: server connections busy and clients waiting",
                  "sv_active pinned at the pool size while clients wait (cl_waiting) means the pool is the limit: "
                  "a bigger pool helps only while the server has idle CPU; waiting clients with spare server "
                  "connections point at the pooler itself.", fig)
    counts: list[int] = []
    for v in pooled:
        groups = [g for g in _groups(view, v) if g.pooler is not None and g.pooler.sv_active is not None]
        if not groups:
            continue
        colour = _colour(view, v)
        xs = [g.clients for g in groups]
        counts += xs
        rows = [g.pooler for g in groups if g.pooler]
        sv = [p.sv_active.value if p.sv_active else 0.0 for p in rows]
        cw = [p.cl_waiting.value if p.cl_waiting else 0.0 for p in rows]
        for ys, style, what in ((sv, "o-", "sv_active"), (cw, "s--", "cl_waiting")):
            chart.mark(ax.plot(xs, ys, style, color=colour, label=f"{v}: {what} (mean)")[0], len(ys),
                       f"{v} {what}: " + "; ".join(f"c{x} {y:.1f}" for x, y in zip(xs, ys, strict=True)))
        size = groups[0].pooler.pool_size if groups[0].pooler else None
        if size:
            ax.axhline(size, color=colour, linestyle=":", linewidth=1.2, label=f"{v}: pool size {size}")
    if not chart.points:
        return None
    ax.set_ylabel("connections / clients")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=7)
    _client_axis(ax, counts)
    return chart


def idle_memory(view: RunView) -> Chart | None:
    variants = [v for v in view.variants() if any(g.memory is not None and g.tps for g in _groups(view, v))]
    groups = {(g.variant, g.clients): g for v in variants for g in _groups(view, v) if g.memory and g.tps}
    if not any(g.memory and (g.memory.idle or g.memory.max_connections) for g in groups.values()):
        return None
    counts = sorted({c for _, c in groups})
    fig, (a, b, c) = _new(1, 3, size=(10.5, 4.4))
    chart = Chart("idle-memory", "idle-memory", "Idle sessions: throughput and memory",
                  "Each idle session holds a backend process: memory available falls by about its PSS times the "
                  "count (hollow markers: before the idle sessions opened), and the workers' TPS shows what that "
                  "costs (articles 003 and 004).", fig)
    width = 0.8 / len(variants)
    per_idle = any(g.memory and g.memory.idle and g.memory.idle_backend_pss_mb for g in groups.values())
    for i, v in enumerate(variants):
        colour = _colour(view, v)
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
        _categorical(ax, [f"c{x}" for x in counts])
    return chart


def charts_for(view: RunView, recs: Sequence[Recommendation], missing: dict[str, list[int]] | None = None
               ) -> list[Chart]:
    """Every chart the run has data for, in the report's order."""
    with matplotlib.rc_context(STYLE):  # artists take their fonts when they are made
        out: list[Chart | None] = [throughput_latency(view, missing or {}), tps_stddev(view)]
        out += [scalability(view, r) for r in recs]
        out += [cpu(view, v) for v in view.variants()]
        out += [waits(view, v) for v in view.variants()]
        out += [timeline(view), pooler(view), idle_memory(view)]
    return [c for c in out if c is not None and c.points > 0]
