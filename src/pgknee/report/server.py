"""The System table's server part: the server's OS from its own /proc (pg_read_file or ssh),
per client count, when pgknee sampled it (a server that is not this machine)."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table

from pgknee.analyze.cpus import ServerRow, kcache_cpu, server_cpus, server_row
from pgknee.analyze.view import RunView
from pgknee.model.keys import Env
from pgknee.report.cells import across, fmt, matrix

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


def _written(get: Callable[[ServerRow], float | None], digits: int) -> Callable[[ServerRow], str]:
    return lambda r: fmt(get(r), digits)


def server_table(view: RunView, variant: str) -> Table | None:
    """The server's own figures per client count: its /proc's samples, and pg_stat_kcache's
    CPU of the database's queries; None when pgknee has neither."""
    groups = [g for g in view.groups if g.variant == variant]
    rows = [server_row(view.data, g) for g in groups]
    kc = [kcache_cpu(view.data, g) for g in groups]
    has_rows, has_kc = any(r is not None for r in rows), any(k is not None for k in kc)
    if not has_rows and not has_kc:
        return None
    env = view.data.env
    cpus = server_cpus(env, view.data.run.target_kind)
    how = [f"its own /proc, {env.get(Env.SERVER_OS, '?')}"] if has_rows else []
    how += [f"pg_stat_kcache {env.get(Env.SERVER_KCACHE, '')}".strip()] if has_kc else []
    out = [[label, *across(rows, _written(get, digits))] for label, get, digits in _ROWS] if has_rows else []
    if has_kc:
        out.append(["Queries' CPU, cores busy (kcache)", *across(kc, lambda k: fmt(k[0], 2))])
        if (n := cpus.n) is not None:
            out.append(["  % of the server's CPUs", *across(kc, lambda k: fmt(100 * k[0] / n, 1))])
        out.append(["  system % of it", *across(kc, lambda k: fmt(k[1], 1))])
    title = f"System — the server: {cpus.label()}; {'; '.join(how)}; CPU % of all its CPUs"
    return matrix(title, ["Metric", *[g.label for g in groups]], out)
