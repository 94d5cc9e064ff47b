"""What a report holds, in order, independent of its format: headings, paragraphs, the
terminal's tables, the charts, the environment. html.py and markdown.py render it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table

from pgknee.analyze.compare import headlines, metadata_differences
from pgknee.analyze.recommend import Recommendation, recommend_all
from pgknee.analyze.resemblance import resemblance
from pgknee.analyze.run import combined, combined_name, missing_steps
from pgknee.analyze.view import RunView
from pgknee.base.dsn import scrub_secrets
from pgknee.model import keys
from pgknee.model.results import StepRecord
from pgknee.report import charts as ch
from pgknee.report import plotting as pl
from pgknee.report import side_by_side as sbs
from pgknee.report import tables as tb
from pgknee.report import terminal as tm
from pgknee.report import workload as wl
from pgknee.report.agents import AGENTS_NOTE, agents_table
from pgknee.report.cells import cell, columns
from pgknee.report.network import NETWORK_NOTE, gain_lines, network_table
from pgknee.report.server import server_table
from pgknee.report.serverside import NOTE as SERVER_SIDE_NOTE
from pgknee.report.serverside import server_side_table
from pgknee.report.waitsource import SOURCES_NOTE, run_sources


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2

    @property
    def anchor(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.text.lower()).strip("-")


@dataclass(frozen=True)
class Para:
    text: str
    kind: str = ""  # '', note, headline, warning, ok, bad


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]
    kind: str = ""


@dataclass(frozen=True)
class TableBlock:
    table: Table


@dataclass(frozen=True)
class ChartBlock:
    chart: pl.Chart


@dataclass(frozen=True)
class KeyValues:
    title: str
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Details:
    summary: str
    blocks: tuple[Block, ...]


Block = Heading | Para | Bullets | TableBlock | ChartBlock | KeyValues | Code | Details


@dataclass
class Report:
    title: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def charts(self) -> list[pl.Chart]:
        out = []
        for b in _walk(self.blocks):
            if isinstance(b, ChartBlock):
                out.append(b.chart)
        return out

    def headings(self) -> list[Heading]:
        return [b for b in self.blocks if isinstance(b, Heading) and b.level == 2]


def _walk(blocks: Sequence[Block]) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        out.append(b)
        if isinstance(b, Details):
            out.extend(_walk(b.blocks))
    return out


@dataclass(frozen=True)
class Options:
    fraction: float = 0.95
    p99_target_ms: float | None = None
    spindles: int = 0


def _steps_table(steps: Sequence[StepRecord], missing: Sequence[tuple[str, int, int]]) -> Table:
    t = columns(Table(title="Steps (in the order they ran; failed and missing ones marked)", show_lines=False),
                ("#", "Variant", "Clients", "Rep", "Status", "TPS", "Avg latency (ms)", "p99 (ms)", "What happened"),
                ("Variant", "Status", "What happened"))
    for s in sorted(steps, key=lambda s: s.seq):
        t.add_row(str(s.seq), s.variant, str(s.clients), str(s.rep),
                  s.status if s.status == "completed" else s.status.upper(),
                  cell(s.tps or None, ",.1f"), cell(s.lat_avg_ms or None, ",.3f"), cell(s.lat_p99_ms or None, ",.3f"),
                  s.status_reason or "")  # a figure of 0 shows as missing
    for v, c, r in missing:
        t.add_row("-", v, str(c), str(r), "NOT RUN", "-", "-", "-", "planned, but the run ended before it")
    return t


ENV_GROUPS = (("Client machine", keys.HOST), ("PostgreSQL server", keys.SERVER), ("Server settings", keys.SETTING),
              ("Embedded cluster", keys.EMBEDDED), ("pgbench", keys.PGBENCH), ("Workload", keys.WORKLOAD),
              ("Target", keys.TARGET), ("pgknee", keys.PGKNEE))


def _environment(view: RunView) -> list[Block]:
    """What a reader needs to reproduce the run. Every text passes scrub_secrets once more:
    nothing with a password reaches the store, and a report is where it would travel furthest."""
    env = view.data.env
    blocks: list[Block] = []
    used: set[str] = {keys.COMMAND_LINE, keys.Env.PLAN_SOURCE, keys.Env.PLAN_FILE}
    for title, prefix in ENV_GROUPS:
        rows = tuple((k[len(prefix):], scrub_secrets(v)) for k, v in sorted(env.items())
                     if k.startswith(prefix) and k not in used)
        used |= {prefix + k for k, _ in rows}
        if rows:
            blocks.append(KeyValues(title, rows))
    rest = tuple((k, scrub_secrets(v)) for k, v in sorted(env.items())
                 if k not in used and not k.startswith(keys.CHECK))
    if rest:
        blocks.append(KeyValues("Other facts recorded with the run", rest))
    cmd = env.get(keys.COMMAND_LINE)
    if cmd:
        blocks.append(Para("The pgknee command line of the run (no secrets: a password travels only in the "
                           "environment or a passfile):", "note"))
        blocks.append(Code(scrub_secrets(shlex.join(json.loads(cmd)))))
    source = env.get(keys.Env.PLAN_SOURCE)
    if source:
        blocks.append(Details(f"Plan file {env.get(keys.Env.PLAN_FILE, '')}", (Code(scrub_secrets(source)),)))
    blocks.append(Details("The validated plan (JSON)", (Code(scrub_secrets(json.dumps(
        view.run.plan, indent=2, sort_keys=True))),)))
    first: dict[str, list[str]] = {}
    steps = {s.step_id: s for s in view.data.steps}
    for step_id, purpose, argv in view.data.commands:
        s = steps.get(step_id) if step_id is not None else None
        key = f"{purpose} ({s.variant})" if s is not None else purpose
        first.setdefault(key, argv)
    if first:
        blocks.append(Para("The commands pgknee ran, the first of each kind (all are in the store's run_commands "
                           "table):", "note"))
        blocks.append(Code(scrub_secrets("\n".join(f"# {k}\n{shlex.join(a)}" for k, a in first.items()))))
    return blocks


def recommendations(view: RunView, opts: Options) -> list[Recommendation]:
    return recommend_all(view, fraction=opts.fraction, p99_target_ms=opts.p99_target_ms, spindles=opts.spindles)


def _recommendation_blocks(view: RunView, recs: Sequence[Recommendation], charts: dict[str, pl.Chart]
                           ) -> list[Block]:
    blocks: list[Block] = [Heading("Recommendation")]
    for r in recs:
        items = tm.recommendation_items(r)
        blocks.append(Para(r.headline(), "headline"))
        chart = charts.get(pl.key_of("scalability", view, r.variant))
        if chart is not None:  # the answer, then the curve it came from: the report's first screen
            blocks.append(ChartBlock(chart))
        blocks.extend(TableBlock(x) for x in items if isinstance(x, Table))
        if r.reasons:
            blocks.append(Bullets(r.reasons))
    return blocks


def build(views: Sequence[RunView], opts: Options | None = None, *, labels: Sequence[str] = (),
          recs: Sequence[Recommendation] | None = None) -> Report:
    """One run (its variants side by side), or several runs combined into one view whose
    variants are the runs (labels A, B, ...). `recs`: the run's recommendations when the caller
    already has them (the fit's bootstrap takes seconds)."""
    opts = opts or Options()
    view = views[0] if len(views) == 1 else combined(views, labels)
    missing = missing_steps(view) if len(views) == 1 else [
        (combined_name(lb, rv, v), c, r) for lb, rv in zip(labels, views, strict=True) for v, c, r in missing_steps(rv)]
    recs = recommendations(view, opts) if recs is None else recs
    lost: dict[str, list[int]] = {}
    for v, c, _ in missing:
        lost.setdefault(v, []).append(c)
    charts = {c.key: c for c in ch.charts_for(view, recs, lost)}
    r = view.run
    title = (f"pgknee report — run {r.run_id}" if len(views) == 1
             else "pgknee comparison — " + ", ".join(f"{lb} = {rv.run.run_id}"
                                                    for lb, rv in zip(labels, views, strict=False)))
    rep = Report(title)
    rep.blocks += _introduction(view, views, labels, missing)
    rep.blocks += _recommendation_blocks(view, recs, charts)
    rep.blocks += _throughput(view, charts)
    rep.blocks += _replay(view) if len(views) == 1 else []
    rep.blocks += _idle_and_pooler(view, charts)
    rep.blocks += _system_and_waits(view, charts)
    rep.blocks += _checks(view)
    rep.blocks += [Heading("Steps"), TableBlock(_steps_table(view.data.steps, missing)),
                   Heading("Environment")]
    for lb, rv in zip(labels or [""], views, strict=False):
        if len(views) > 1:
            rep.blocks.append(Heading(f"{lb}: run {rv.run.run_id}", 3))
        rep.blocks += _environment(rv)
    return rep


def _introduction(view: RunView, views: Sequence[RunView], labels: Sequence[str],
                  missing: Sequence[tuple[str, int, int]]) -> list[Block]:
    b: list[Block] = []
    if len(views) == 1:
        b.append(Para(tm.header(view).plain))
    else:
        for lb, rv in zip(labels, views, strict=False):
            b.append(Para(f"{lb}: " + tm.header(rv).plain))
        diffs = [d for rv in views[1:] for d in metadata_differences(views[0].data.env, rv.data.env)]
        if diffs:
            b.append(Para("The runs differ in what matters for a comparison: " + "; ".join(diffs), "warning"))
    failed = [s for s in view.data.steps if s.status != "completed"]
    if failed or missing:
        b.append(Para(f"{len(failed)} step(s) did not complete and {len(missing)} planned step(s) were never run: "
                      "this report shows what exists; see Steps for what is missing.", "warning"))
    return b


def _throughput(view: RunView, charts: dict[str, pl.Chart]) -> list[Block]:
    b: list[Block] = [Heading("Throughput and latency")]
    b += [ChartBlock(charts[k]) for k in ("throughput-latency", "tps-stddev") if k in charts]
    comparison = sbs.variant_comparison(view)
    if comparison is not None:
        b.append(TableBlock(comparison))
        b.extend(Para(h, "headline") for h in headlines(view))
    b += network_blocks(view)
    agents = agents_table(view)
    if agents is not None:
        b += [TableBlock(agents), Para(AGENTS_NOTE, "note")]
    for v in view.variants():
        b.append(TableBlock(tb.data_summary(view, v)))
        scripts = tb.scripts_table(view, v)
        if scripts is not None:
            b.append(TableBlock(scripts))
    b.append(Para(tm.summary_note(view, "the first client count"), "note"))
    if "timeline" in charts:
        b += [Heading("Stability within each step"), ChartBlock(charts["timeline"])]
    return b


def network_blocks(view: RunView) -> list[Block]:
    """The network per transaction, and pipeline mode's gain at each simulated round trip."""
    table = network_table(view)
    if table is None:
        return []
    return [TableBlock(table), Para(NETWORK_NOTE, "note"), *[Para(h, "headline") for h in gain_lines(view)]]
def _replay(view: RunView) -> list[Block]:
    """A captured workload's replay against its capture (analyze/resemblance.py)."""
    r = resemblance(*view.data.statement_mix)
    return [] if r is None else [Heading("Replay against capture"), TableBlock(wl.resemblance_table(r)),
                                 Para(r.note, "note")]


def _idle_and_pooler(view: RunView, charts: dict[str, pl.Chart]) -> list[Block]:
    b: list[Block] = []
    idle = sbs.idle_memory_table(view)
    if "idle-memory" in charts or idle is not None:
        b.append(Heading("Idle sessions and memory"))
        if "idle-memory" in charts:
            b.append(ChartBlock(charts["idle-memory"]))
        if idle is not None:
            b.append(TableBlock(idle))
    pooled = [t for v in view.variants() if (t := tb.pooler_table(view, v)) is not None]
    if pooled:
        b.append(Heading("Pooler"))
        if "pooler" in charts:
            b.append(ChartBlock(charts["pooler"]))
        b.extend(TableBlock(t) for t in pooled)
    return b


def _system_and_waits(view: RunView, charts: dict[str, pl.Chart]) -> list[Block]:
    return [*_system(view, charts), *_server_side(view), *_waits(view, charts)]


def _system(view: RunView, charts: dict[str, pl.Chart]) -> list[Block]:
    b: list[Block] = [Heading("CPU and load")]
    for v in view.variants():
        if (c := charts.get(pl.key_of("cpu", view, v))) is not None:
            b.append(ChartBlock(c))
        b.append(TableBlock(tb.system_table(view, v)))
        if (c := charts.get(pl.key_of("server-cpu", view, v))) is not None:
            b.append(ChartBlock(c))
        if (server := server_table(view, v)) is not None:
            b.append(TableBlock(server))
    return b


def _server_side(view: RunView) -> list[Block]:
    """The server's WAL, checkpoints and I/O, when recorded."""
    tables = [TableBlock(t) for v in view.variants() if (t := server_side_table(view, v)) is not None]
    return [Heading("WAL, checkpoints and I/O"), *tables, Para(SERVER_SIDE_NOTE, "note")] if tables else []


def _waits(view: RunView, charts: dict[str, pl.Chart]) -> list[Block]:
    b: list[Block] = [Heading("Wait events"), Para(tb.WAIT_NOTE, "note")]
    sampled = False
    for v in view.variants():
        if (c := charts.get(pl.key_of("waits", view, v))) is not None:
            sampled = True
            b.append(ChartBlock(c))
        tables: list[Block] = [TableBlock(tb.wait_table(g.label + view.named(v), g.wait_profile))
                               for g in view.groups if g.variant == v and g.done and g.snapshots]
        if tables:
            b.append(Details("Wait profile per client count" + view.named(v, " — "), tuple(tables)))
        if sources := [x for t, line in run_sources(view, v) for x in (TableBlock(t), Para(line, "note"))]:
            b.append(Details("Two wait sources: pg_stat_activity and pg_wait_sampling" + view.named(v, " — "),
                             (*sources, Para(SOURCES_NOTE, "note"))))
    if not sampled:
        b.append(Para("pg_stat_activity sampling was off in this run (--sample-interval 0), so there is no wait "
                      "profile." if view.run.plan.get("sample_interval_s") == 0 else
                      "No completed step has pg_stat_activity snapshots, so there is no wait profile.", "note"))
    return b


def _checks(view: RunView) -> list[Block]:
    b: list[Block] = [Heading("Checks and warnings"), *[TableBlock(t) for t in tb.checks_tables(view)]]
    money = view.money
    if money is not None:
        b.append(Para(money.text, "ok" if money.ok is True else "bad"))
    if view.warnings:
        b.append(Bullets(tuple(view.warnings), "warning"))
    return b
