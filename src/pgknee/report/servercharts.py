"""The server's own CPU per client count, from its /proc (pg_read_file or ssh): where its time
went, and its run queue against its CPUs; drawn when pgknee sampled a server that is not this
machine (this machine's chart is the 'cpu' one)."""

from __future__ import annotations

import numpy as np

from pgknee.analyze.cpus import server_cpus, server_row
from pgknee.analyze.view import RunView
from pgknee.report.plotting import Chart, categorical_axis, groups_of, key_of, new_figure, title_suffix

PARTS = (("user", "#1f77b4", "mean_user"), ("system", "#d62728", "mean_system"),
         ("iowait", "#ff7f0e", "mean_iowait"), ("steal", "#7f7f7f", "mean_steal"))


def server_cpu(view: RunView, variant: str) -> Chart | None:
    pairs = [(g, r) for g in groups_of(view, variant) if (r := server_row(view.data, g)) is not None]
    if not pairs:
        return None
    cpus = server_cpus(view.data.env, view.data.run.target_kind)
    fig, (top, bottom) = new_figure(2, 1, size=(9.0, 5.6), sharex=True, height_ratios=[3, 2])
    chart = Chart(key_of("server-cpu", view, variant), "server-cpu",
                  "The server's CPU and run queue per step" + title_suffix(view, variant),
                  f"From the server's own /proc ({cpus.label()}). A run queue above its CPU line means more "
                  "runnable processes than CPUs: connections wait for a CPU, not for the database.", fig)
    xs = list(range(len(pairs)))
    base = np.zeros(len(pairs))
    for name, colour, attr in PARTS:
        vals = np.array([getattr(r, attr) for _, r in pairs])
        chart.mark(top.bar(xs, vals, bottom=base, color=colour, label=name, width=0.6), len(pairs),
                   [f"{g.label} {name} {x:.1f}%" for (g, _), x in zip(pairs, vals, strict=True)])
        base += vals
    top.plot(xs, [r.peak_cpu for _, r in pairs], "_", color="#000", markersize=18, mew=2, label="peak sample (total)")
    top.set_ylim(0, 100)
    top.set_ylabel("server CPU, % of all its CPUs\n(mean over the bench phase)")
    top.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    chart.mark(bottom.plot(xs, [r.run_queue for _, r in pairs], "s--", color="#ff7f0e",
                           label="run queue (mean runnable)")[0], len(pairs))
    if cpus.n is not None:
        bottom.axhline(cpus.n, color="#d62728", linestyle=":", linewidth=1.5, label=f"server CPUs: {cpus.n}")
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("processes")
    bottom.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    categorical_axis(bottom, [g.label for g, _ in pairs])
    return chart
