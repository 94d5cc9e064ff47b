"""What every chart of the report shares: the Chart record that tags the artists carrying
measured data (so a test finds them in the rendered page), the style, SVG and PNG output with
ids of their own, and the helpers the chart kinds draw with (report/charts.py)."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from pgknee.analyze.cpus import client_cpus, server_cpus
from pgknee.analyze.view import Group, RunView, Spread

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
STYLE: Any = {"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
         "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8, "legend.framealpha": 0.85,
         "svg.fonttype": "none", "font.family": "sans-serif", "text.parse_math": False,  # '$' is just a character
         "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"]}


@dataclass
class Chart:
    key: str  # unique within a report: the kind, or kind-N-variant for a per-variant chart (key_of)
    kind: str  # throughput-latency | tps-stddev | scalability | cpu | server-cpu | waits | timeline | pooler
    # | idle-memory
    title: str
    caption: str  # what to look for
    figure: Figure
    points: int = 0  # measured values drawn
    tips: dict[str, str] = field(default_factory=dict)  # artist id -> its values, shown on hover
    marked: int = 0  # artists tagged so far

    def mark(self, artist: Artist | BarContainer, values: int, tips: str | Sequence[str] = "") -> None:
        """Tag an artist that carries data, so it can be found in the rendered SVG; `tips`: its
        values as text (one per bar for a bar chart), which the browser shows on hover."""
        gid = f"data-{self.key}-{self.marked}"
        self.marked += 1
        if isinstance(artist, BarContainer):  # a bar chart: one rectangle per bar
            for i, patch in enumerate(artist.patches):
                patch.set_gid(f"{gid}-{i}")
                if not isinstance(tips, str) and i < len(tips):
                    self.tips[f"{gid}-{i}"] = tips[i]
        else:
            artist.set_gid(gid)
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


def new_figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (9.0, 4.2), sharex: bool = False,
         height_ratios: Sequence[float] | None = None) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex, height_ratios=height_ratios)
    return fig, [ax for row in axes for ax in row]


def colour_of(view: RunView, variant: str) -> str:
    return PALETTE[view.variants().index(variant) % len(PALETTE)]


def groups_of(view: RunView, variant: str) -> list[Group]:
    return sorted((g for g in view.groups if g.variant == variant), key=lambda g: g.clients)


def doubling(counts: Sequence[int]) -> bool:
    """A sweep that (roughly) doubles from step to step: drawn on a log-2 axis."""
    c = sorted(set(counts))
    return len(c) >= 3 and c[0] > 0 and all(b / a >= 1.8 for a, b in zip(c, c[1:], strict=False))


def client_axis(ax: Axes, counts: Sequence[int], label: str = "clients") -> None:
    c = sorted(set(counts))
    if doubling(c):
        ax.set_xscale("log", base=2)
    if 0 < len(c) <= 16:
        ax.set_xticks(c, [str(x) for x in c])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def spread_band(ax: Axes, xs: Sequence[float], figs: Sequence[Spread], colour: str) -> None:
    if any(f.n > 1 for f in figs):
        ax.fill_between(xs, [f.lo for f in figs], [f.hi for f in figs], color=colour, alpha=0.18, linewidth=0)


def tip_text(what: str, xs: Sequence[int], figs: Sequence[Spread], digits: int) -> str:
    return f"{what}: " + "; ".join(f"c{x} {f.value:,.{digits}f}" + (f" ({f.lo:,.{digits}f}..{f.hi:,.{digits}f})"
                                                                     if f.n > 1 else "")
                                   for x, f in zip(xs, figs, strict=True))


def measured(groups: Sequence[Group], get: Callable[[Group], Spread | None]) -> tuple[list[int], list[Spread]]:
    pairs = [(g.clients, f) for g in groups if (f := get(g)) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def key_of(kind: str, view: RunView, variant: str) -> str:
    """A per-variant chart's key: unique by the variant's position, readable by its name."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in variant).strip("-").lower()[:40]
    return f"{kind}-{view.variants().index(variant) + 1}" + (f"-{slug}" if slug else "")


def categorical_axis(ax: Axes, labels: Sequence[str], xlabel: str = "clients") -> None:
    ax.set_xticks(range(len(labels)), labels)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", visible=False)


def cpus_of(view: RunView) -> int | None:
    """The server's CPUs (the line AAS is read against), None when unknown."""
    return server_cpus(view.data.env, view.data.run.target_kind).n


def client_cpus_of(view: RunView) -> int | None:
    """The CPUs of the machine the OS samples come from: the client's (the server's too when local)."""
    return client_cpus(view.data.env)


def title_suffix(view: RunView, variant: str) -> str:
    return view.named(variant, " — ")


def shade(hexcolour: str, i: int) -> str:
    """The i-th lighter shade of a colour, for several events of one wait type."""
    r, g, b = (int(hexcolour[k:k + 2], 16) for k in (1, 3, 5))
    f = min(0.6, 0.22 * i)
    return "#{:02x}{:02x}{:02x}".format(*(int(c + (255 - c) * f) for c in (r, g, b)))
