"""Comparisons between variants (or runs): paired ratios with intervals, and a headline. Pure.

Variants are interleaved per (clients, repetition), so repetition i of A and of B ran side
by side under the same machine conditions: the ratio is estimated from the paired
log-ratios, with a t interval over the pairs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.analyze.cpus import server_cpus
from pgknee.analyze.summary import pct_change
from pgknee.analyze.view import Group, RunView
from pgknee.base import lazy
from pgknee.model.keys import SETTING, Env, workload_fact
from pgknee.model.results import StepRecord


@dataclass(frozen=True)
class Ratio:
    value: float  # geometric mean of the paired ratios
    lo: float | None  # 95% interval, None with fewer than 2 pairs
    hi: float | None
    pairs: int

    @property
    def beyond_noise(self) -> bool | None:
        if self.lo is None or self.hi is None:
            return None
        return self.lo > 1.0 or self.hi < 1.0


def paired_ratio(base: Sequence[StepRecord], other: Sequence[StepRecord], attr: str = "tps") -> Ratio | None:
    """`other` over `base`, pairing repetitions by number."""
    by_rep = {s.rep: s for s in base if getattr(s, attr)}
    logs = [math.log(getattr(o, attr) / getattr(by_rep[o.rep], attr))
            for o in other if getattr(o, attr) and o.rep in by_rep]
    if not logs:
        return None
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return Ratio(math.exp(m), None, None, 1)
    half = float(lazy.stats().t.ppf(0.975, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Ratio(math.exp(m), math.exp(m - half), math.exp(m + half), len(logs))


@dataclass(frozen=True)
class ComparisonRow:
    """One variant at one client count, against the first variant at the same count."""

    group: Group
    base: str  # the first variant's name
    tps_ratio: Ratio | None  # None for the first variant itself
    latency_ratio: Ratio | None  # mean latency, paired the same way
    tps_change: float | None = None  # % of the shown TPS against the first variant's (None for it)


def comparison_rows(view: RunView) -> list[ComparisonRow]:
    """Per client count (in the order swept), each variant with its paired ratios to the first."""
    variants = view.variants()
    first = variants[0] if variants else ""
    by = {(g.variant, g.clients): g for g in view.groups}
    clients = list(dict.fromkeys(grp.clients for grp in view.groups))
    rows = []
    for c in clients:
        base = by.get((first, c))
        for v in variants:
            g = by.get((v, c))
            if g is None:
                continue
            change = (pct_change(g.tps.value, base.tps.value)
                      if base is not None and base is not g and g.tps and base.tps else None)
            # the TPS and latency ratios to the first variant: both from its paired repetitions, or neither
            ratios = ((paired_ratio(base.done, g.done), paired_ratio(base.done, g.done, "lat_avg_ms"))
                      if base is not None and v != first else (None, None))
            rows.append(ComparisonRow(g, first, *ratios, change))
    return rows


def tps_curve(view: RunView, variant: str) -> list[tuple[int, float]]:
    """(clients, TPS) of a variant's counts, in the order swept."""
    return [(g.clients, g.tps.value) for g in view.groups if g.variant == variant and g.tps is not None]


def headlines(view: RunView) -> list[str]:
    """One sentence per variant against the first: the largest TPS ratio, its interval, and
    where each reaches 95% of its best TPS."""
    variants = view.variants()
    if len(variants) < 2:
        return []
    first = variants[0]
    base_groups = {g.clients: g for g in view.groups if g.variant == first}
    out = []
    for v in variants[1:]:
        ratios = []
        for g in view.groups:
            b = base_groups.get(g.clients)
            if g.variant == v and b is not None and (r := paired_ratio(b.done, g.done)) is not None:
                ratios.append((g.clients, r))
        several = len(tps_curve(view, v)) > 1  # with one client count, where it saturates says nothing
        sats = ((saturation_point(tps_curve(view, v)), saturation_point(tps_curve(view, first))) if several
                else (None, None))
        out.append(headline(v, first, ratios, *sats))
    return out


def saturation_point(points: Sequence[tuple[int, float]], fraction: float = 0.95) -> int | None:
    """The smallest client count whose TPS reaches `fraction` of the variant's best."""
    if not points:
        return None
    best = max(t for _, t in points)
    return min(c for c, t in points if t >= fraction * best)


def headline(name: str, base_name: str, ratios: Sequence[tuple[int, Ratio]], sat: int | None,
             base_sat: int | None) -> str:
    """'pipeline: x1.76 TPS at 2 clients (95% interval x1.52..x2.04); reaches 95% of its best TPS at 8
    clients (normal: 16)'."""
    if not ratios:
        return f"{name}: no client count to compare with {base_name}"
    # the largest difference the repetitions can tell from noise; the largest of all otherwise
    clear = [cr for cr in ratios if cr[1].beyond_noise]
    c, r = max(clear or ratios, key=lambda cr: abs(math.log(cr[1].value)))
    interval = (f" (95% interval x{r.lo:.2f}..x{r.hi:.2f}, {r.pairs} pairs)" if r.lo is not None and r.hi is not None
                else " (one repetition: no interval)")
    noise = {True: "", False: "; within the noise", None: ""}[r.beyond_noise]
    text = f"{name}: x{r.value:.2f} TPS vs {base_name} at {c} clients{interval}{noise}"
    if sat is not None and base_sat is not None:
        when = "fewer" if sat < base_sat else "more" if sat > base_sat else "the same number of"
        text += (f"; reaches 95% of its best TPS at {sat} clients ({base_name}: {base_sat}), "
                 f"saturating at {when} connections")
    return text


# what must match for a comparison across runs to mean something
KEY_METADATA = (Env.SERVER_VERSION, Env.HOST_CPUS, Env.HOST_MEM_GB, Env.PGBENCH_VERSION, workload_fact("workload"),
                workload_fact("users"), workload_fact("scale"), Env.TARGET_ENDPOINT)


def metadata_differences(a: dict[str, str], b: dict[str, str]) -> list[str]:
    keys = [k for k in KEY_METADATA if a.get(k) != b.get(k)]
    if a.get(Env.TARGET_KIND) == b.get(Env.TARGET_KIND) == "embedded":
        keys = [k for k in keys if k != Env.TARGET_ENDPOINT]  # a throwaway cluster gets a new port each time
    keys += sorted(k for k in set(a) | set(b) if k.startswith(SETTING) and a.get(k) != b.get(k))
    out = [f"{k}: {a.get(k, '-')} vs {b.get(k, '-')}" for k in keys]
    cpus_a, cpus_b = server_cpus(a).n, server_cpus(b).n  # the server's machine, when both runs know it
    if cpus_a is not None and cpus_b is not None and cpus_a != cpus_b:
        out.append(f"server CPUs: {cpus_a} vs {cpus_b}")
    return out
