"""The pool size to use, from a sweep of pool sizes (--variant 'pooled:transaction:pool=2,4,8,16'):
the variants that differ only in their pool size are read together, at the largest client count
they all measured (where the pool caps the server's connections most), as one curve of
throughput by pool size, read as a count of connections is (analyze/curve.py). Pure."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from pgknee.analyze.answer import Recommendation
from pgknee.analyze.curve import interval, read, widened
from pgknee.analyze.view import Group, RunView

_POOL = re.compile(r"(^|:)\s*pool\s*=\s*(\d+)\s*(?=:|$)")


def families(view: RunView) -> dict[str, list[tuple[int, str]]]:
    """Pooled variants that differ only in their pool size, three or more of them: the family's
    name (the spec with its pool sizes listed) → (pool size, variant), smallest pool first."""
    out: dict[str, list[tuple[int, str]]] = {}
    for v in view.variants():
        m = _POOL.search(v)
        g = next((g for g in view.groups if g.variant == v), None)
        if m is None or g is None or g.steps[0].pooler_kind != "managed" or g.steps[0].pool_size is None:
            continue
        out.setdefault(v[:m.start(2)] + "*" + v[m.end(2):], []).append((g.steps[0].pool_size, v))
    named = {}
    for key, members in out.items():
        if len(members) >= 3:
            members.sort()
            named[key.replace("*", ",".join(str(p) for p, _ in members))] = members
    return named


def recommend_pool(view: RunView, family: str, members: Sequence[tuple[int, str]], template: Recommendation
                   ) -> Recommendation | None:
    """The smallest pool reaching the fraction of the plateau (or of the best) at the largest
    client count every pool measured, within the p99 target; None when they share no count."""
    groups = {v: {g.clients: g for g in view.groups if g.variant == v and g.tps is not None} for _, v in members}
    common = set.intersection(*(set(gs) for gs in groups.values()))
    if not common:
        return None
    clients = max(common)
    at = {pool: groups[v][clients] for pool, v in members}
    by_pool = {pool: [float(s.tps) for s in g.done if s.tps] for pool, g in at.items()}
    reading = read(by_pool, None, max(g.noise_pct for g in at.values()))
    label = f"{family} at {clients} clients"
    base = dataclasses.replace(template, variant=label, concurrency="pool size", measured=reading.counts, family=True,
                               repetitions=min(len(x) for x in by_pool.values()), fit=None, knee=None,
                               reasons=(*reading.lines("pooled server connections"), *_reasons(reading.counts, at,
                                                                                                clients)),
                               checks={}, connections=None, modelled_n=None, modelled_interval=None,
                               counts_interval=None, level_tps=reading.level, best_tps=reading.tps_at(reading.best),
                               measured_best=reading.best,
                               saturated=(), next_counts=(), noise_pct=100 * reading.noise.sd,
                               noise_source=reading.noise.source, outliers=reading.outliers)
    if reading.shape == "grows":
        return dataclasses.replace(base, verdict="not-identified",
                                   next_counts=(2 * reading.counts[-1], 4 * reading.counts[-1]))
    allowed = ({p for p, g in at.items() if g.p99 is not None and g.p99.value <= template.p99_target_ms}
               if template.p99_target_ms is not None else None)
    chosen = reading.count(template.fraction, allowed)
    if chosen is None:
        return dataclasses.replace(base, verdict="no-count-meets-target")
    span, growing = interval(reading, template.fraction, allowed)
    return dataclasses.replace(base, verdict=reading.verdict, connections=chosen, counts_interval=widened(span, chosen),
                               settled=reading.shape != "unsettled", growing_share=growing)


def _reasons(pools: Sequence[int], at: Mapping[int, Group], clients: int) -> tuple[str, ...]:
    rows = []
    for p in pools:
        tps, lat, p99 = at[p].tps, at[p].lat_avg, at[p].p99
        if tps is not None and lat is not None:
            rows.append(f"pool {p}: {tps.value:,.0f} TPS, mean latency {lat.value:.2f} ms"
                        + (f", p99 {p99.value:.2f} ms" if p99 is not None else ""))
    return (f"at {clients} clients through pgbouncer, by pool size: " + "; ".join(rows),)
