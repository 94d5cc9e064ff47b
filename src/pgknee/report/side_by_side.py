"""The terminal's tables of variants side by side per client count: throughput and latency
with the paired ratios to the first variant, and the idle sessions' memory with each
variant's TPS change. Formatting only: the rows come from analyze/compare.py."""

from __future__ import annotations

from rich import box
from rich.table import Table

from pgknee.analyze.compare import comparison_rows
from pgknee.analyze.view import Group, MemoryRow, RunView
from pgknee.model.rules import BEST
from pgknee.report.cells import cell, columns, ratio, value, with_range


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
    columns(t, ("Clients", "Variant", "TPS", "Avg Latency (ms)", "StdDev (ms)", "p99 (ms)")
            + (("Failed",) if failures else ())
            + (f"TPS vs {first}", f"Latency vs {first}", "TPS difference")
            + (("Pooler: sv_active · waiting · wait ms",) if pooled else ()), ("Clients", "Variant"), fold=("Variant",))
    last = None
    for row in comparison_rows(view):
        g = row.group
        if last is not None and g.clients != last:
            t.add_section()
        r = row.tps_ratio
        noise = NOISE[r.beyond_noise] if r is not None else ""
        t.add_row(_first_of_count(g, last), g.variant + ("*" if g.noisy else ""),
                  with_range(g.tps, _tps_digits(g)), with_range(g.lat_avg, 3),
                  value(g.lat_stddev, 3), value(g.p99, 3),
                  *((f"{g.failed:,}",) if failures else ()), ratio(r), ratio(row.latency_ratio), noise,
                  *((_pooler_cell(g),) if pooled else ()))
        last = g.clients
    return t


NOISE = {True: "beyond noise", False: "within noise", None: "unknown"}


def _tps_digits(g: Group) -> int:
    """Whole transactions from 100 a second up, two decimals below."""
    return 0 if g.tps and g.tps.value >= 100 else 2


def _pooler_cell(g: Group) -> str:
    p = g.pooler
    if p is None:
        return ""
    if p.sv_active is None:
        return "no console"
    wait = f" · {p.wait_ms_per_txn.value:.2f}" if p.wait_ms_per_txn else ""
    return f"{p.sv_active.value:.1f} · {p.cl_waiting.value if p.cl_waiting else 0:.1f}{wait}"


def idle_memory_table(view: RunView) -> Table | None:
    """Articles 003 and 004's view: per client count, each variant's idle sessions, TPS and
    its change against the first variant, p99, the machine's available memory and what the
    server's processes hold (proportional set size), per idle backend, and the reads."""
    if not any(g.memory is not None and (g.memory.idle or g.memory.max_connections) for g in view.groups):
        return None
    first = view.variants()[0]
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
    last = None
    for row in comparison_rows(view):
        g = row.group
        if last is not None and g.clients != last:
            t.add_section()
        idle, memory = _memory_cells(g.memory, restarts)
        t.add_row(_first_of_count(g, last), g.variant, *idle, value(g.tps, 0), _change(row.tps_change),
                  value(g.p99, 3), *memory)
        last = g.clients
    return t


def _first_of_count(g: Group, last: int | None) -> str:
    """The client count, on the first row of its section only."""
    return "" if g.clients == last else f"c{g.clients}"


def _change(pct: float | None) -> str:
    return cell(pct, "+.1f", "%", none="")


def _memory_cells(m: MemoryRow | None, restarts: bool) -> tuple[list[str], list[str]]:
    """The idle sessions (and the variant's max_connections) before the TPS, and the memory and
    reads after the p99; the idle sessions' own figures blank when there were none."""
    if m is None:
        return ["0", *([""] if restarts else [])], ["-", "", "-", "", "-", "-"]
    idle = [f"{m.idle} {m.idle_kind}" if m.idle else "0",
            *([cell(m.max_connections or None, ".0f", none="")] if restarts else [])]  # none known: 0
    own = [value(m.available_drop_mb, 0), value(m.idle_backend_pss_mb, 2)] if m.idle else ["", ""]
    return idle, [value(m.available_mb, 0), own[0], value(m.server_pss_mb, 0), own[1], value(m.blks_read_per_s, 0),
                  value(m.hit_pct, 2)]
