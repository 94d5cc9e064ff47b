"""A run's agents (pgknee run --agents): each one's share of each step, its CPU, its round trip
and its clock, as the terminal and the documents show them. Formatting only: the rows and the
judgements come from analyze/agents.py."""

from __future__ import annotations

from rich import box
from rich.table import Table

from pgknee.analyze.agents import agent_rows, overlap
from pgknee.analyze.view import RunView

AGENTS_NOTE = ("Each agent ran pgbench with its share of the step's clients from a common start on the store's "
               "clock (each agent's offset to it measured and corrected). The step's TPS is the agents' summed over "
               "their own windows, its percentiles come from their merged histograms (HdrHistogram buckets added), "
               "never from these per-agent percentiles; capacity = its pgbench's CPU over min(threads, CPUs) cores "
               "(85% and over: that agent may be the bottleneck); overlap = the share of the longest window all "
               "the agents covered together.")


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def agents_table(view: RunView) -> Table | None:
    rows = agent_rows(view.data)
    if not rows:
        return None
    t = Table(title="Agents: each one's share", box=box.SIMPLE_HEAVY, title_justify="left")
    heads = ("Step", "Agent", "Host", "Clients", "Threads", "TPS", "TPS share", "CPU %", "Capacity", "RTT (ms)",
             "Clock (ms)", "p50 (ms)", "p99 (ms)", "Overlap")
    for i, h in enumerate(heads):
        t.add_column(h, justify="left" if i < 3 else "right")
    last = None
    for r in rows:
        a, step = r.share, r.step
        first = step.step_id != last
        if not first:
            label, ov = "", ""
        else:
            if last is not None:
                t.add_section()
            label = f"c{step.clients} r{step.rep}" + ("" if step.status == "completed" else f" ({step.status})")
            shares = view.data.agents.get(step.step_id, [])
            ov = _f(None if (o := overlap(shares)) is None else o * 100, ".1f") + ("%" if o is not None else "")
        t.add_row(label, a.agent, a.host, str(a.clients), str(a.threads), _f(a.tps, ",.1f"),
                  _f(None if r.tps_share is None else r.tps_share * 100, ".0f") + ("%" if r.tps_share is not None
                                                                                  else ""),
                  _f(a.cpu_pct, ".0f"), _f(r.capacity_pct, ".0f") + ("%" if r.capacity_pct is not None else ""),
                  _f(a.rtt_ms, ".3f"), _f(a.clock_offset_ms, "+.1f"), _f(a.lat_p50_ms, ".3f"), _f(a.lat_p99_ms, ".3f"),
                  ov)
        last = step.step_id
    return t
