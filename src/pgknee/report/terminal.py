"""The terminal's output of each command: a run's tables in order, a recommendation, the list
of runs, a comparison's header, a sizing. Renderers return text; only the CLI prints. The
tables themselves are report/tables.py (one variant) and report/side_by_side.py."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.console import Group as Stack
from rich.table import Table
from rich.text import Text

from pgknee.analyze.compare import headlines
from pgknee.analyze.cpus import UNKNOWN_HINT, managed_note, server_line
from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.run import RunListing
from pgknee.analyze.sizing import Held, Reach, Sizing
from pgknee.analyze.view import RunView
from pgknee.analyze.words import clause
from pgknee.model.keys import Env
from pgknee.model.rules import BEST
from pgknee.plan import variant_from_dict
from pgknee.report.agents import AGENTS_NOTE, agents_table
from pgknee.report.cells import columns
from pgknee.report.network import network_items, rtt_line
from pgknee.report.server import server_table
from pgknee.report.serverside import NOTE as SERVER_SIDE_NOTE
from pgknee.report.serverside import server_side_table
from pgknee.report.side_by_side import idle_memory_table, variant_comparison
from pgknee.report.tables import (
    WAIT_NOTE,
    checks_tables,
    data_summary,
    pooler_table,
    scripts_table,
    system_table,
    wait_table,
)
from pgknee.report.waitsource import sources_items


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


def header(view: RunView) -> Text:
    r, env = view.run, view.data.env
    plan = r.plan
    t = Text()
    t.append(f"Run {r.run_id}", style="bold")
    t.append(f"  {r.status}  ({view.steps_done}/{r.steps_planned} steps)\n")
    t.append(f"workload {r.workload} · target {r.target_kind} {r.target_label} · "
             f"PostgreSQL {env.get(Env.SERVER_VERSION, '?').split()[0]} · "
             f"pgbench {env.get(Env.PGBENCH_VERSION, '?').split()[0]}\n")
    t.append(server_line(env, r.target_kind) + "\n")
    managed = managed_note(env)
    if managed:
        t.append(managed + "\n")
    t.append(f"client machine: {env.get(Env.HOST_CPUS, '?')} CPUs, {env.get(Env.HOST_MEM_GB, '?')} GB · "
             f"{_step_length(plan)} per step, {plan.get('reps')} rep(s), warm-up {plan.get('warmup_s')} s, "
             f"sampling every {plan.get('sample_interval_s', 0) * 1000:.0f} ms\n")
    variants = plan.get("variants") or []
    t.append("variants: " + "; ".join(f"{v['name']} = {variant_from_dict(v).describe()}" for v in variants)
        + (" (interleaved per client count and repetition)" if len(variants) > 1 else ""))
    if (line := rtt_line(view)) is not None:
        t.append("\n" + line)
    return t


def summary_note(view: RunView, base: str) -> str:
    """How to read a Data Summary."""
    how = ("the best of the repetitions (the one with the highest TPS, as article 002 reports)"
           if view.summary == BEST else "medians of the repetitions")
    return (f"% vs baseline {base}; figures are {how}; latency measured per transaction from pgbench's log; "
            "* = noisy step")


def run_report(view: RunView, *, waits: bool = True) -> list[RenderableType]:
    """A run's tables: the variants side by side, the idle sessions' memory, each variant's own
    tables, the checks, the workload's check and the warnings."""
    items: list[RenderableType] = [header(view), Text("")]
    comparison = variant_comparison(view)
    if comparison is not None:
        items += [comparison, *[Text("▶ " + h) for h in headlines(view)]]
    items += network_items(view)
    agents = agents_table(view)
    if agents is not None:
        items += [agents, Text(AGENTS_NOTE, style="dim")]
    idle = idle_memory_table(view)
    if idle is not None:
        items.append(idle)
    for variant in view.variants():
        items += _variant_items(view, variant, waits)
    items += checks_tables(view)
    money = view.money
    if money is not None:
        items.append(Text(("✓ " if money.ok is True else "✗ ") + money.text))
    if view.warnings:
        items.append(Text("\nWarnings:", style="bold"))
        items += [Text(f"  ! {w}") for w in view.warnings]
    return items


def _variant_items(view: RunView, variant: str, waits: bool) -> list[RenderableType]:
    items: list[RenderableType] = [data_summary(view, variant)]
    base = next((g for g in view.groups if g.variant == variant), None)
    if base is not None:
        items.append(Text(summary_note(view, base.label), style="dim"))
    items += [t for t in (scripts_table(view, variant), pooler_table(view, variant)) if t is not None]
    items.append(system_table(view, variant))
    items += [t for t in (server_table(view, variant),) if t is not None]
    if (side := server_side_table(view, variant)) is not None:
        items += [side, Text(SERVER_SIDE_NOTE, style="dim")]
    if waits:
        items.append(Text(WAIT_NOTE, style="dim"))
        items += [wait_table(f"Wait profile {g.label}" + view.named(variant)
                             + " (client backends, bench phase)", g.wait_profile)
                  for g in view.groups if g.variant == variant and g.done]
        items += sources_items(view, variant)  # pg_wait_sampling beside them, when recorded
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
                           f"intervals by bootstrap over {f.method} ({f.draws:,} draws each)")
        t.add_row("σ contention", f"{p.sigma:.4f} [{f.sigma.lo:.4f}..{f.sigma.hi:.4f}]")
        t.add_row("κ coherency", f"{p.kappa:.6f} [{f.kappa.lo:.6f}..{f.kappa.hi:.6f}]")
        peak = "not identified" if not f.identified else f"{p.peak_n:.1f} [{f.peak_n.lo:.1f}..{f.peak_n.hi:.1f}]"
        t.add_row("modelled peak N*", peak)
        if math.isfinite(f.peak_x.hi):
            t.add_row("modelled peak TPS" if f.identified else "modelled ceiling TPS",
                      f"{p.peak_x:,.0f} [{f.peak_x.lo:,.0f}..{f.peak_x.hi:,.0f}]")
        if r.modelled_n is not None:
            span = f" [{r.modelled_interval[0]:.1f}..{r.modelled_interval[1]:.1f}]" if r.modelled_interval else ""
            t.add_row(f"model reaches {r.fraction:.0%} at", f"{r.modelled_n:.1f}{span} (an opinion, not the answer)")
    if r.noise_pct is not None:
        t.add_row("noise per repetition", f"{r.noise_pct:.1f}% ({r.noise_source})")
    if r.knee is not None:
        t.add_row("knee of the measured curve (Kneedle)", str(r.knee))
    t.add_row("rule of thumb (cores x 2) + spindles", rule_of_thumb(r))
    if r.checks:
        t.add_row("checks", "; ".join(f"{name} {ok} ok" + (f", {warn} WARN" if warn else "")
                                      for name, (ok, warn) in r.checks.items()))
    items.append(t)
    if r.reasons:
        items.append(Text("Why:\n" + "\n".join(f"  - {x}" for x in r.reasons)))
    return items


def rule_of_thumb(r: Recommendation) -> str:
    """With the server's cores and where that count came from; withheld when unknown."""
    if r.heuristic is None or r.cores is None:
        return f"withheld: server CPUs unknown ({r.cores_source or '?'}): {UNKNOWN_HINT}"
    return f"{r.heuristic} ({r.cores} server cores: {r.cores_source or '?'}; {r.spindles} spindles)"


def runs_table(runs: Sequence[RunListing]) -> Table:
    t = columns(Table(box=box.SIMPLE, title="Runs", title_justify="left"),
                ("Run", "Created (UTC)", "Status", "Workload", "Target", "Steps", "Best TPS"),
                ("Run", "Created (UTC)", "Status", "Workload", "Target"))
    for x in runs:
        r, best = x.run, x.best
        t.add_row(r.run_id, r.created_at[:19], x.status, r.workload, f"{r.target_kind} {r.target_label}",
                  f"{x.completed}/{r.steps_planned}",
                  f"{best.tps:,.0f} @ c{best.clients}" if best is not None and best.tps else "-")
    return t


def compare_header(views: Sequence[RunView]) -> Text:
    """Which runs a comparison reads: one (its variants), or A and B."""
    return Text("\n".join((f"{letter} = " if len(views) > 1 else "") +
                          f"run {v.data.run.run_id} ({v.data.run.workload}, {v.data.run.status}, "
                          f"{v.data.run.created_at[:16]})" for letter, v in zip("AB", views, strict=False)))


def differences(diffs: Sequence[str]) -> Text:
    return Text("Warning: the runs differ in what matters for a comparison:\n  " + "\n  ".join(diffs))


def sizing_text(s: Sizing, measured: Reach | None, cores_source: str = "", held: Held | None = None) -> Text:
    lines = [*_held_lines(s, held),
             f"Little's law: {s.tps:g} transactions/s x {s.latency_s:g} s in the database = {s.busy:g} connections "
             f"busy on average (round up: {s.busy_whole})",
             f"rule of thumb (cores x 2) + spindles: ({s.cores} x 2) + {s.spindles} = {s.rule_of_thumb} connections "
             "doing work at once" + clause(" (cores: {})", cores_source)]
    if measured is not None and measured.first is not None:
        lines.append(f"measured ({measured.variant}): {measured.tps:g} TPS first reached at {measured.first} clients")
    elif measured is not None and measured.best is not None:
        lines.append(f"measured ({measured.variant}): the curve never reaches {measured.tps:g} TPS; its best is "
                     f"{measured.best[1]:,.0f} at {measured.best[0]} clients — more connections will not get there")
    return Text("\n".join(lines))


def _held_lines(s: Sizing, h: Held | None) -> list[str]:
    """What the application's own figures say: which hold time Little's law used, and what it keeps
    open now against what it needs busy."""
    if h is None:
        return []
    out = [f"the application as observed: {h.tps:,.1f} transactions/s, each holding its connection {h.hold_ms:.1f} ms"
           + (f" ({h.active_ms:.1f} ms running statements, {h.idle_ms:.1f} ms idle inside the transaction: its own "
              "work)" if h.active_ms is not None and h.idle_ms is not None else "")]
    if h.active_ms is not None and h.idle_ms and abs(s.latency_s * 1000 - h.hold_ms) < 1e-6:
        sql_only = s.tps * h.active_ms / 1000
        out.append(f"Little's law takes the hold, not the SQL time: with {h.active_ms:.1f} ms it would say "
                   f"{sql_only:.1f} connections, {h.hold_ms / max(h.active_ms, 1e-9):.1f} times too few")
    if h.open_p99 is not None and h.busy_p99 is not None:
        out.append(f"the application keeps {h.open_p99:.0f} sessions open and {h.busy_p99:.0f} busy at p99; a pooler "
                   "in transaction mode could bring the server's connections down to about the busy ones, never below "
                   "them: it cannot shorten the time a transaction idles inside")
    return out


def _step_length(plan: dict[str, Any]) -> str:
    """'60 s', or for --duration auto 'until steady TPS ±2% (20-120 s)'."""
    if plan.get("steady_pct") is None:
        return f"{plan.get('duration_s')} s"
    return f"until steady TPS ±{plan['steady_pct']:g}% ({plan.get('min_duration_s')}-{plan.get('duration_s')} s)"
