"""The pool size to use, from a sweep of pool sizes (--variant 'pooled:transaction:pool=2,4,8,16'):
the variants that differ only in their pool size are read together, at the largest client count
they all measured (where the pool caps the server's connections most), as one curve of
throughput by pool size, and the same evidence as for a count of connections decides
(analyze/saturation.py). Pure."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Mapping, Sequence

from pgknee.analyze.answer import Recommendation
from pgknee.analyze.records import Group, RunView
from pgknee.analyze.saturation import count_interval, noise_draws, shape_of, shape_reason

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
    latency: dict[int, float] = {}  # the clients are the same at every pool: no Little's law line
    noise = max(g.noise_pct for g in at.values())
    sh = shape_of(by_pool, latency, noise)
    label = f"{family} at {clients} clients"
    shape_line = tuple(filter(None, [shape_reason(sh, "pooled server connections")]))
    base = dataclasses.replace(template, variant=label, concurrency="pool size", measured=sh.counts, family=True,
                               repetitions=min(len(x) for x in by_pool.values()), fit=None, knee=None,
                               reasons=_reasons(sh.counts, at, clients), checks={}, connections=None, interval=None,
                               modelled_n=None, counts_interval=None, level_tps=None, measured_best=None,
                               saturated=(), next_counts=())  # nothing of the member variant's own answer
    if sh.grows:
        return dataclasses.replace(base, verdict="not-identified", next_counts=(2 * sh.counts[-1], 4 * sh.counts[-1]),
                                   reasons=(*shape_line, *base.reasons))
    level = sh.level if sh.levels_off else sh.best
    verdict = "levels-off" if sh.levels_off else "measured-peak"

    def rule(d: Mapping[int, Sequence[float]]) -> int | None:
        s = shape_of(d, latency, noise)
        return _smallest_pool(at, d, template.fraction * (s.level if sh.levels_off else s.best),
                              template.p99_target_ms)

    chosen = rule(by_pool)
    if chosen is None:
        return dataclasses.replace(base, verdict="no-count-meets-target")
    span = count_interval([rule(d) for d in noise_draws(by_pool, noise)]) or (chosen, chosen)
    return dataclasses.replace(base, verdict=verdict, connections=chosen, level_tps=level, measured_best=sh.best_n,
                               counts_interval=(min(span[0], chosen), max(span[1], chosen)),
                               reasons=(*shape_line, *base.reasons))


def _smallest_pool(at: Mapping[int, Group], by_pool: Mapping[int, Sequence[float]], target: float,
                   p99_target_ms: float | None) -> int | None:
    for pool in sorted(by_pool):
        g = at[pool]
        if statistics.median(by_pool[pool]) >= target and (
                p99_target_ms is None or (g.p99 is not None and g.p99.value <= p99_target_ms)):
            return pool
    return None


def _reasons(pools: Sequence[int], at: Mapping[int, Group], clients: int) -> tuple[str, ...]:
    rows = []
    for p in pools:
        tps, lat, p99 = at[p].tps, at[p].lat_avg, at[p].p99
        if tps is not None and lat is not None:
            rows.append(f"pool {p}: {tps.value:,.0f} TPS, mean latency {lat.value:.2f} ms"
                        + (f", p99 {p99.value:.2f} ms" if p99 is not None else ""))
    return (f"at {clients} clients through pgbouncer, by pool size: " + "; ".join(rows),)
