"""The network per transaction (the terminal's table) and the round trip in a run's header.
Formatting only: the rows come from analyze/network.py."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pgknee.analyze.network import NetworkRow, gain_headline, network_rows, pipeline_gains
from pgknee.analyze.view import RunView
from pgknee.model.facts import Network
from pgknee.report.cells import cell, columns

NETWORK_NOTE = ("RTT: the median of 200 bare round trips (a Sync each, no transaction) on pgbench's path before "
                "each step (through the relay for a simulated hop: the asked delay plus the relay's own cost, "
                "~0.05 ms); round trips: per transaction, counted from the scripts (a statement each, a pipeline "
                "one); network = round trips x RTT, the part of each transaction that pipeline mode or a nearer "
                "client removes")


def network_table(view: RunView) -> Table | None:
    """Per variant and client count: the round trip, the round trips per transaction, the ms of
    each transaction on the network and its share of the mean latency. None for a run stored
    without round-trip probes."""
    rows = network_rows(view)
    if not rows:
        return None
    simulated = any(r.asked_ms for r in rows)
    heads = ("Clients", "Variant", *(("Asked RTT (ms)",) if simulated else ()), "RTT (ms)", "RTT p99 (ms)",
             "Round trips", "Network (ms)", "Avg Latency (ms)", "Network share")
    t = columns(Table(title="Network per transaction", box=box.SIMPLE_HEAVY, title_justify="left"), heads,
                ("Clients", "Variant"), fold=("Variant",))
    last = None
    for r in sorted(rows, key=lambda r: r.clients):
        if last is not None and r.clients != last:
            t.add_section()
        t.add_row(f"c{r.clients}" if r.clients != last else "", r.variant, *_cells(r, simulated))
        last = r.clients
    return t


def _cells(r: NetworkRow, simulated: bool) -> list[str]:
    return [*([f"{r.asked_ms:g}" if r.asked_ms else "-"] if simulated else []), cell(r.rtt_ms, ".3f"),
            cell(r.rtt_p99_ms, ".3f"), cell(r.round_trips, ".2f"), cell(r.network_ms, ".3f"),
            cell(r.latency_ms, ".3f"), cell(r.share_pct, ".0f", "%")]


def rtt_line(view: RunView) -> str | None:
    """'network: round trip to the server 0.014 ms (median of the direct probes before each step)'."""
    direct = [r.rtt_ms for r in network_rows(view) if not r.asked_ms and r.rtt_ms is not None]
    direct += [n.direct_rtt_ms for f in view.data.facts.values()
               if (n := f.of(Network)) is not None and n.direct_rtt_ms is not None]
    if not direct:
        return None
    direct.sort()
    return (f"network: round trip to pgbench's endpoint {direct[len(direct) // 2]:.3f} ms "
            f"(median of the direct probes before each step; simulated hops come on top)")


def network_items(view: RunView) -> list[RenderableType]:
    """The table, its note, and pipeline mode's gain at each simulated round trip."""
    table = network_table(view)
    if table is None:
        return []
    return [table, Text(NETWORK_NOTE, style="dim"), *[Text("▶ " + h) for h in gain_lines(view)]]


def gain_lines(view: RunView) -> list[str]:
    return gain_headline(pipeline_gains(view))
