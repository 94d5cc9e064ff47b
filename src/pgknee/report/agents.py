"""A run's agents (pgknee run --agents): each one's share of each step, its CPU, its round trip
and its clock, as the terminal and the documents show them. Formatting only: the rows and the
judgements come from analyze/agents.py."""

from __future__ import annotations

from rich import box
from rich.table import Table

from pgknee.analyze.agents import agent_rows, overlap
from pgknee.analyze.view import RunView
from pgknee.report.cells import cell, columns

AGENTS_NOTE = ("Each agent ran pgbench with its share of the step's clients from a common start on the store's "
               "clock (each agent's offset to it measured and corrected). The step's TPS is the agents' summed over "
               "their own windows, its percentiles come from their merged histograms (HdrHistogram buckets added), "
               "never from these per-agent percentiles; capacity = its pgbench's CPU over min(threads, CPUs) cores "
               "(85% and over: that agent may be the bottleneck); overlap = the share of the longest window all "
               "the agents covered together.")


def agents_table(view: RunView) -> Table | None:
    rows = agent_rows(view.data)
    if not rows:
        return None
    heads = ("Step", "Agent", "Host", "Clients", "Threads", "TPS", "TPS share", "CPU %", "Capacity", "RTT (ms)",
             "Clock (ms)", "p50 (ms)", "p99 (ms)", "Overlap")
    t = columns(Table(title="Agents: each one's share", box=box.SIMPLE_HEAVY, title_justify="left"), heads, heads[:3])
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
            ov = cell(overlap(shares), ".1%")  # a share: '%' writes it x100
        t.add_row(label, a.agent, a.host, str(a.clients), str(a.threads), cell(a.tps, ",.1f"),
                  cell(r.tps_share, ".0%"), cell(a.cpu_pct, ".0f"), cell(r.capacity_pct, ".0f", "%"),
                  cell(a.rtt_ms, ".3f"), cell(a.clock_offset_ms, "+.1f"), cell(a.lat_p50_ms, ".3f"),
                  cell(a.lat_p99_ms, ".3f"), ov)
        last = step.step_id
    return t
