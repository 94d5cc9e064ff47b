"""The System table's server part: the server's OS from its own /proc (pg_read_file or ssh),
per client count, when pgknee sampled it (a server that is not this machine)."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table

from pgknee.analyze.machine import ServerRow, server_cpus, server_row
from pgknee.analyze.records import RunView
from pgknee.keys import Env
from pgknee.report.cells import fmt, matrix

_ROWS: tuple[tuple[str, Callable[[ServerRow], float | None], int], ...] = (
    ("Peak CPU total %", lambda r: r.peak_cpu, 1),
    ("Mean CPU total %", lambda r: r.mean_cpu, 1),
    ("  user % (mean)", lambda r: r.mean_user, 1),
    ("  system % (mean)", lambda r: r.mean_system, 1),
    ("  iowait % (mean)", lambda r: r.mean_iowait, 1),
    ("  steal % (mean)", lambda r: r.mean_steal, 1),
    ("Peak load average 1m", lambda r: r.peak_load1, 2),
    ("Run queue (mean runnable)", lambda r: r.run_queue, 1),
    ("Context switches/s", lambda r: r.ctx_per_s, 0),
    ("Min memory available (MB)", lambda r: r.mem_available_mb, 0),
    ("Disk read MB/s", lambda r: r.disk_read_mbps, 2),
    ("Disk write MB/s", lambda r: r.disk_write_mbps, 2),
    ("Network in MB/s", lambda r: r.net_rx_mbps, 2),
    ("Network out MB/s", lambda r: r.net_tx_mbps, 2),
)


def server_table(view: RunView, variant: str) -> Table | None:
    groups = [g for g in view.groups if g.variant == variant]
    rows = [server_row(view.data, g) for g in groups]
    if not any(r is not None for r in rows):
        return None
    env = view.data.env
    title = (f"System — the server: {server_cpus(env, view.data.run.target_kind).label()}; its own /proc, "
             f"{env.get(Env.SERVER_OS, '?')}; CPU % of all its CPUs")
    out = [[label, *[fmt(get(r), digits) if r is not None else "-" for r in rows]] for label, get, digits in _ROWS]
    return matrix(title, ["Metric", *[g.label for g in groups]], out)
