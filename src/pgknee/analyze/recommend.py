"""From a sweep to an answer: how many connections, how sure, and why. Pure.

The evidence of one variant (analyze/saturation.py) decides, in this order:

1. the client set the pace (pgbench's threads busy, sessions waiting on the client): withheld;
   a pooler process near a full core (pooler-bound) at a count: that count and those above it are
   the pooler's ceiling, not the server's, and are left out of the curve (withheld when fewer than
   three counts are left);
2. the measured throughput levels off (flat within the run's noise allowance over the last
   doubling of the count): the smallest measured count reaching a fraction (95%) of the plateau
   and within the p99 target, if given;
3. the Universal Scalability Law, fitted to the throughput by database-side concurrency (a pool
   caps it), places a peak, or a ceiling (strong contention) reached inside the sweep: the smallest
   measured count reaching the fraction of it;
4. the throughput fell beyond the noise after its best: read against the measured best;
5. a resource was saturated (the server's CPU, Average Active Sessions on one wait class above
   its CPUs) while throughput still grew beyond the noise: an answer for now,
   read against the measured best, with the repetitions and counts between that would settle it;
6. otherwise the peak is not reached, and the counts to run next go upward; unless nothing could
   be seen of the server's saturation (its CPUs unknown, its CPU not sampled: a managed server
   without --server-cpus), when the answer is withheld until its CPUs are given.

Every answer carries the measured counts plausible noise would have picked (noise_draws: the
same rule on the curve moved by the run's noise), and the second opinions (Kneedle's knee, the
model) with whether they agree. Reasons are built from the run's own evidence."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.answer import ANSWERED, Recommendation
from pgknee.analyze.machine import Machine, machine_of, server_reasons, server_unseen, system_reasons
from pgknee.analyze.network import network_reasons
from pgknee.analyze.poolprocs import families as process_families
from pgknee.analyze.poolprocs import pooler_bound, recommend_processes
from pgknee.analyze.poolsize import families, recommend_pool
from pgknee.analyze.records import Group, RunView
from pgknee.analyze.saturation import (
    Saturation,
    Shape,
    count_interval,
    kneedle,
    noise_draws,
    saturated,
    shape_of,
    shape_reason,
)
from pgknee.analyze.usl import Fit, fit, next_counts, smallest_n_reaching, smallest_n_reaching_each
from pgknee.analyze.waits import total_aas
from pgknee.keys import CheckId, CheckStatus
from pgknee.rules import database_concurrency

__all__ = ["ANSWERED", "Recommendation", "concurrency_of", "knee", "measured_points", "recommend", "recommend_all"]

knee = kneedle  # the knee of a measured curve: Kneedle's


def recommend_all(view: RunView, variants: Sequence[str] | None = None, *, fraction: float = 0.95,
                  p99_target_ms: float | None = None, spindles: int = 0) -> list[Recommendation]:
    """One recommendation per variant (all of the run's by default), then, for the pooled variants
    that differ only in their pool size, the pool size to use (analyze/poolsize.py), and for those
    that differ only in their processes, how many pgbouncer processes (analyze/poolprocs.py)."""
    recs = [recommend(view, v, fraction=fraction, p99_target_ms=p99_target_ms, spindles=spindles)
            for v in (variants or view.variants())]
    by_variant = {r.variant: r for r in recs}
    for name, members in families(view).items():
        template = by_variant.get(members[0][1])
        if template is not None and all(v in by_variant for _, v in members):
            pool = recommend_pool(view, name, members, template)
            recs += [pool] if pool is not None else []
    for name, members in process_families(view).items():
        template = by_variant.get(members[0][1])
        if template is not None and all(v in by_variant for _, v in members):
            procs = recommend_processes(view, name, members, template)
            recs += [procs] if procs is not None else []
    return recs


def concurrency_of(g: Group) -> int:
    """The database-side concurrency of a client count (rules.database_concurrency: a managed
    pool and its reserve cap it)."""
    s = g.steps[0]
    return database_concurrency(g.clients, s.pooler_kind, s.pool_size, s.pool_reserve, s.pool_processes)


def measured_points(view: RunView, variant: str) -> list[tuple[int, float]]:
    """(database-side concurrency, TPS) of each completed repetition of a variant, by client count."""
    groups = sorted((g for g in view.groups if g.variant == variant), key=lambda g: g.clients)
    return [(concurrency_of(g), s.tps) for g in groups for s in g.done if s.tps]


def _client_bound(groups: Sequence[Group]) -> str | None:
    for g in groups:
        for _rep, checks in g.checks:
            for c in checks:
                if c.id is CheckId.CLIENT_CPU and c.status is CheckStatus.WARN:
                    return (f"at c{g.clients} {c.detail}: add pgbench threads (--threads), a bigger client "
                            "machine, or several load generators")
    for g in groups:
        client_read = sum(w.aas for w in g.waits if w.wait_event == "ClientRead")
        if g.system.peak_cpu is not None and g.system.peak_cpu < 80 and client_read > 0.5 * g.clients:
            return (f"at c{g.clients} sessions waited on the client (Client:ClientRead AAS {client_read:.2f}) while "
                    f"the machine's CPU peaked at {g.system.peak_cpu:.0f}%: the load generator, not the server, set "
                    "the pace")
    return None


def _reasons(groups: Sequence[Group], rec_n: int | None, cores: Machine, fraction: float = 0.95) -> list[str]:
    out: list[str] = []
    pts = [(g.clients, g.tps.value) for g in groups if g.tps]
    if len(pts) >= 2:
        best = max(pts, key=lambda p: p[1])
        first = pts[0]
        if best[0] == first[0]:
            out.append(f"TPS was highest at the smallest count, {first[0]} clients ({first[1]:,.0f}), and "
                       f"{pts[-1][1]:,.0f} at {pts[-1][0]} ({100 * (pts[-1][1] / best[1] - 1):+.0f}%)")
        else:
            out.append(f"TPS grew from {first[1]:,.0f} at {first[0]} clients to {best[1]:,.0f} at {best[0]} "
                       f"({100 * (best[1] / first[1] - 1):+.0f}%)"
                       + (f", and at {pts[-1][0]} it was {pts[-1][1]:,.0f} ({100 * (pts[-1][1] / best[1] - 1):+.0f}% "
                          "from the best)" if pts[-1][0] != best[0] else ""))
    lat = [(g.clients, g.lat_avg.value, g.lat_stddev.value, g.p99.value) for g in groups
           if g.lat_avg and g.lat_stddev and g.p99]
    if len(lat) >= 2:
        a, b = lat[0], lat[-1]
        tps_of = dict(pts)
        if len(pts) >= 2 and max(pts, key=lambda p: p[1])[0] != pts[-1][0]:
            why = ": past the peak, more connections add waiting, not throughput"
        elif tps_of.get(a[0]) and tps_of.get(b[0]) and b[1] / a[1] > tps_of[b[0]] / tps_of[a[0]]:
            why = (f": ×{b[1] / a[1]:.1f} the latency for ×{tps_of[b[0]] / tps_of[a[0]]:.1f} the throughput, each "
                   "added connection buys less throughput with more waiting")
        else:
            why = ""
        out.append(f"latency went from {a[1]:.2f} ms (stddev {a[2]:.2f}, p99 {a[3]:.2f}) at {a[0]} clients to "
                   f"{b[1]:.2f} ms (stddev {b[2]:.2f}, p99 {b[3]:.2f}) at {b[0]}{why}")
    with_waits = [g for g in groups if g.snapshots]
    if len(with_waits) >= 2:
        last = with_waits[-1]
        top = max(last.waits, key=lambda w: w.aas, default=None)
        if top is not None:
            first_aas = next((w.aas for w in with_waits[0].waits
                              if (w.wait_event_type, w.wait_event) == (top.wait_event_type, top.wait_event)), 0.0)
            server = cores.server.n
            above = f", more than the server's {server} CPUs" if server is not None and top.aas > server else ""
            out.append(f"at {last.clients} clients sessions waited most on {top.wait_event_type}:{top.wait_event}: "
                       f"AAS {top.aas:.2f}{above}, against {first_aas:.2f} at {with_waits[0].clients} clients "
                       f"(all client sessions: {total_aas(last.waits):.2f})")
    out.extend(system_reasons(groups, cores))
    client = [(g.system.client_cpu / g.threads, g) for g in groups if g.system.client_cpu is not None and g.threads]
    if client:
        share, g = max(client, key=lambda x: x[0])
        out.append(f"pgbench used at most {share:.0f}% of its threads' capacity (at {g.clients} clients): "
                   + ("the client was not the bottleneck" if share < 85 else "the client neared its limit"))
    if rec_n is not None:
        out.append(f"beyond {rec_n} connections the model gains at most the last {100 * (1 - fraction):.0f}% of "
                   "the peak")
    return [*out, *network_reasons(groups)]  # a network hop, unlike a saturated client, withholds nothing


def recommend(view: RunView, variant: str | None = None, *, fraction: float = 0.95,
              p99_target_ms: float | None = None, spindles: int = 0) -> Recommendation:
    v = variant or view.variants()[0]
    groups = [g for g in view.groups if g.variant == v and g.tps is not None]
    bound = pooler_bound(groups)
    if bound is not None:
        groups = [g for g in groups if g.clients < bound[0]]
    cores = machine_of(view.data.env, view.data.run.target_kind)
    cores = dataclasses.replace(cores, server_evidence=tuple(server_reasons(view, groups, cores.server)))
    pooled = any(g.steps[0].pooler_kind == "managed" for g in groups)
    n = cores.server.n
    start = Recommendation(variant=v, verdict="not-enough-data", connections=None, interval=None, modelled_n=None,
                           fit=None, knee=None, heuristic=n * 2 + spindles if n is not None else None, cores=n,
                           spindles=spindles, fraction=fraction, p99_target_ms=p99_target_ms,
                           checks=_check_counts(groups), concurrency="pool size" if pooled else "clients",
                           cores_source=cores.server.source,
                           repetitions=min((len(g.done) for g in groups), default=1))
    by_n: dict[int, list[float]] = {}  # the repetitions' TPS by database-side concurrency
    for g in groups:
        by_n.setdefault(concurrency_of(g), []).extend(float(s.tps) for s in g.done if s.tps)
    if any(s.rate for g in groups for s in g.steps):
        return dataclasses.replace(start, verdict="open-loop", reasons=tuple(_reasons(groups, None, cores)),
                                   measured=tuple(sorted(by_n)))
    why = (bound[1],) if bound else ()  # from the first pooler-bound count on, the curve is the pooler's
    if len(by_n) < 3:
        return dataclasses.replace(start, reasons=(*why, *_reasons(groups, None, cores)), measured=tuple(sorted(by_n)),
                                   verdict="withheld" if why else start.verdict, pooler_bound="".join(why))
    r = _below_the_sweep(_decide(start, groups, by_n, cores, view))
    if bound is None:
        return r
    # never 'run more clients next' past a pooler-bound count: more clients meet the same pooler
    below = tuple(c for c in r.next_counts if c < bound[0])
    return dataclasses.replace(r, reasons=(bound[1], *r.reasons), next_counts=below, pooler_bound=bound[1])


def _below_the_sweep(r: Recommendation) -> Recommendation:
    """An answer at the smallest count measured, which was also the best: the counts below it are
    where the curve's rise is, so they are proposed first."""
    lo = r.measured[0] if r.measured else None
    if not r.answered or lo is None or lo <= 1 or r.connections != lo or r.concurrency != "clients":
        return r
    below = tuple(sorted({1, lo // 2} - {lo}))
    return dataclasses.replace(r, next_counts=(*below, *(c for c in r.next_counts if c not in below)))


def _check_counts(groups: Sequence[Group]) -> dict[CheckId, tuple[int, int]]:
    """How many steps each check passed and warned on."""
    checks: dict[CheckId, tuple[int, int]] = {}
    for g in groups:
        for _rep, cs in g.checks:
            for c in cs:
                ok, warn = checks.get(c.id, (0, 0))
                checks[c.id] = (ok + (c.status is CheckStatus.OK), warn + (c.status is CheckStatus.WARN))
    return checks


def _decide(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]],
                    cores: Machine, view: RunView) -> Recommendation:
    """Withheld when the client set the pace; else the evidence decides (module docstring):
    a curve that levels off, a peak the model places, a peak measured, a saturated resource
    while throughput still grows, or throughput still growing with nothing saturated."""
    client = _client_bound(groups)
    f = fit(sorted(by_n.items()))
    ev = _evidence(view, groups, by_n, cores, f, start.fraction)
    if client is not None:
        return dataclasses.replace(start, verdict="withheld", reasons=(client, *_reasons(groups, None, cores)),
                                   fit=f, knee=ev.knee)
    # the model sees a plateau: strong contention (σ) bounds the throughput at λ/σ, reached inside the range
    plateau = (not f.identified and math.isfinite(f.peak_x.hi) and f.sigma.lo > 0.05
               and smallest_n_reaching(f.params, start.fraction, f.max_n) is not None)
    if f.identified:
        return _modelled(start, groups, by_n, cores, ev, False)
    if ev.shape.levels_off:
        return _levels_off(start, groups, by_n, cores, ev)
    if plateau:
        return _modelled(start, groups, by_n, cores, ev, True)
    seen = _measured_peak(start, groups, by_n) if ev.shape.declines else None
    if seen is not None:
        return dataclasses.replace(seen, fit=f, knee=ev.knee, saturated=ev.lines(),
                                   reasons=(*seen.reasons, *ev.opinions(seen), *_reasons(groups, None, cores)))
    if ev.saturations:
        return _saturated(start, groups, by_n, cores, ev)
    unseen = server_unseen(view, groups, cores)
    return dataclasses.replace(start, verdict="not-identified", fit=f, knee=ev.knee, server_unseen=unseen,
                               reasons=(*filter(None, [shape_reason(ev.shape)]),
                                        *([f"whether the server saturated cannot be seen: {unseen}"]
                                          if unseen else []),
                                        *_reasons(groups, None, cores)),
                               next_counts=tuple(next_counts([g.clients for g in groups], cores.server.n)))


@dataclass(frozen=True)
class _Evidence:
    """What the sweep shows of one variant: the measured curve, the saturated resources, the
    model's fit, Kneedle's knee."""

    shape: Shape
    saturations: tuple[Saturation, ...]
    fit: Fit
    knee: int | None
    fraction: float

    def lines(self) -> tuple[str, ...]:
        """Each saturated resource, short (the headline's; the reasons have the details)."""
        return tuple(s.short() for s in self.saturations)

    def model_count(self, counts: Sequence[int]) -> tuple[float, int] | None:
        """Where the model crosses the fraction of its peak (or ceiling), and the first measured
        count at or above it."""
        n = smallest_n_reaching(self.fit.params, self.fraction, 2.0 * self.fit.max_n)
        if n is None or (not self.fit.identified and not math.isfinite(self.fit.peak_x.hi)):
            return None
        return n, min((c for c in counts if c >= n), default=counts[-1])

    def opinions(self, r: Recommendation) -> tuple[str, ...]:
        """Where the methods agree with the answer or not: an opinion agrees when it falls inside
        the answer's count interval, or one measured step from the answer."""
        if r.connections is None:
            return ()
        counts = self.shape.counts
        lo, hi = r.counts_interval or (r.connections, r.connections)
        i = counts.index(r.connections) if r.connections in counts else 0
        near = set(counts[max(i - 1, 0):i + 2]) | {c for c in counts if lo <= c <= hi}

        def agrees(c: float) -> str:
            return "agrees" if (min(near) <= c <= max(near)) else "disagrees"

        out = []
        if self.knee is not None:
            out.append(f"Kneedle (Satopää et al. 2011) places the knee of the measured curve at {self.knee} clients: "
                       f"it {agrees(self.knee)} with {r.connections}")
        else:
            out.append("Kneedle (Satopää et al. 2011) detects no knee in the measured curve")
        m = self.model_count(counts)
        if m is not None:
            what = "peak" if self.fit.identified else "ceiling"
            out.append(f"the scalability model reaches {self.fraction:.0%} of its modelled {what} at {m[0]:.1f} "
                       f"(the first count measured past it: {m[1]}): it {agrees(m[1])}")
        else:
            out.append("the scalability model places neither a peak nor a ceiling (σ "
                       f"{self.fit.params.sigma:.2f} [{self.fit.sigma.lo:.2f}..{self.fit.sigma.hi:.2f}])")
        return tuple(out)


def _evidence(view: RunView, groups: Sequence[Group], by_n: dict[int, list[float]], cores: Machine,
              f: Fit, fraction: float) -> _Evidence:
    latency: dict[int, float] = {}
    for g in sorted(groups, key=lambda g: g.clients):
        if g.lat_avg is not None:
            latency.setdefault(concurrency_of(g), g.lat_avg.value)
    sh = shape_of(by_n, latency, max(g.noise_pct for g in groups))
    return _Evidence(sh, tuple(saturated(view, groups, cores)), f, kneedle(list(zip(sh.counts, sh.tps, strict=True))),
                     fraction)


def _rule_interval(by_n: Mapping[int, Sequence[float]], noise_pct: float,
                   rule: Callable[[Mapping[int, Sequence[float]]], int | None]) -> tuple[int, int] | None:
    """The counts `rule` picks on the measured curve moved by plausible noise (noise_draws)."""
    return count_interval([rule(d) for d in noise_draws(by_n, noise_pct)])


def _between(counts: Sequence[int], lo: int, hi: int) -> tuple[int, ...]:
    """Counts to measure between the measured ones from lo to hi (the next measured count on each
    side when lo and hi are one count): the midpoints not measured yet."""
    i, j = counts.index(lo) if lo in counts else 0, counts.index(hi) if hi in counts else len(counts) - 1
    if i == j:
        i, j = max(i - 1, 0), min(j + 1, len(counts) - 1)
    span = counts[i:j + 1]
    return tuple(m for a, b in zip(span, span[1:], strict=False) if (m := (a + b) // 2) not in counts and a < m < b)


def _levels_off(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]], cores: Machine,
                ev: _Evidence) -> Recommendation:
    """The measured curve levels off: the smallest measured count reaching the fraction of the
    plateau's throughput, its interval from the same rule on noisy copies of the curve."""
    sh, fraction, p99 = ev.shape, start.fraction, start.p99_target_ms

    def rule(d: Mapping[int, Sequence[float]]) -> int | None:
        return _smallest_reaching(groups, d, fraction * shape_of(d, {}, sh.noise_pct).level, p99)

    chosen = rule(by_n)
    base = dataclasses.replace(start, fit=ev.fit, knee=ev.knee, level_tps=sh.level, saturated=ev.lines(),
                               measured=sh.counts)
    if chosen is None:
        return dataclasses.replace(base, verdict="no-count-meets-target",
                                   target_missed=_target_missed(groups, by_n, sh.level, fraction, p99),
                                   reasons=(*_evidence_lines(ev), *_reasons(groups, None, cores)))
    span = _rule_interval(by_n, sh.noise_pct, rule) or (chosen, chosen)
    span = (min(span[0], chosen), max(span[1], chosen))
    r = dataclasses.replace(base, verdict="levels-off", connections=chosen, counts_interval=span,
                            interval=(float(span[0]), float(span[1])), next_counts=_between(sh.counts, *span))
    return dataclasses.replace(r, reasons=(*_evidence_lines(ev), *ev.opinions(r), *_reasons(groups, None, cores)))


def _evidence_lines(ev: _Evidence) -> tuple[str, ...]:
    """The curve's shape, then each saturated resource."""
    return (*filter(None, [shape_reason(ev.shape)]), *(s.line() for s in ev.saturations))


def _modelled(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]], cores: Machine,
              ev: _Evidence, plateau: bool) -> Recommendation:
    """The model places a peak (or a ceiling reached inside the sweep): the smallest measured count
    reaching the fraction of it within the p99 target; its interval from the bootstrap fits."""
    f, fraction = ev.fit, start.fraction
    ceiling = 2.0 * f.max_n
    each = smallest_n_reaching_each(f.samples, fraction, ceiling)
    draws = each[np.isfinite(each)]
    interval = ((float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))) if draws.size else None)
    chosen = _smallest_reaching(groups, by_n, fraction * f.params.peak_x, start.p99_target_ms)
    reasons = _reasons(groups, chosen, cores, fraction)
    if plateau:
        reasons.insert(0, f"throughput levels off rather than peaks: contention σ {f.params.sigma:.2f} "
                          f"[{f.sigma.lo:.2f}..{f.sigma.hi:.2f}] bounds it near {f.params.peak_x:,.0f} TPS, and the "
                          "sweep shows no decline, so the count is read against that bound")
    counts = ev.shape.counts
    span = None
    if interval is not None and chosen is not None:
        lo, hi = (min((c for c in counts if c >= x), default=counts[-1]) for x in interval)
        span = (min(lo, chosen), max(hi, chosen))
    r = dataclasses.replace(start, verdict="recommended" if chosen is not None else "no-count-meets-target",
                            fit=f, knee=ev.knee, connections=chosen, interval=interval, counts_interval=span,
                            modelled_n=smallest_n_reaching(f.params, fraction, ceiling), saturated=ev.lines(),
                            measured=counts, level_tps=f.params.peak_x,
                            next_counts=_between(counts, *span) if span else (),
                            target_missed="" if chosen is not None else _target_missed(
                                groups, by_n, f.params.peak_x, fraction, start.p99_target_ms))
    return dataclasses.replace(r, reasons=(*_evidence_lines(ev), *ev.opinions(r), *reasons))


def _saturated(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]], cores: Machine,
               ev: _Evidence) -> Recommendation:
    """A resource saturated while throughput still grew beyond the noise: an answer for now, read
    against the best measured, never counts upward."""
    sh, fraction, p99 = ev.shape, start.fraction, start.p99_target_ms

    rule = _reaching_the_best(groups, fraction, p99)
    chosen = rule(by_n)
    base = dataclasses.replace(start, fit=ev.fit, knee=ev.knee, measured_best=sh.best_n, level_tps=sh.best,
                               saturated=ev.lines(), measured=sh.counts)
    if chosen is None:
        return dataclasses.replace(base, verdict="no-count-meets-target",
                                   target_missed=_target_missed(groups, by_n, sh.best, fraction, p99),
                                   reasons=(*_evidence_lines(ev), *_reasons(groups, None, cores)))
    span = _rule_interval(by_n, sh.noise_pct, rule) or (chosen, chosen)
    span = (min(span[0], chosen), max(span[1], chosen))
    between = _between(sh.counts, span[0], sh.counts[-1])
    # every count between measured, and the growth beyond the noise over several repetitions: one doubling
    # more shows where it ends (never the 4-doubling climb of a curve with nothing saturated)
    settled = not between and start.repetitions >= 3
    r = dataclasses.replace(base, verdict="saturated", connections=chosen, counts_interval=span,
                            interval=(float(span[0]), float(span[1])),
                            next_counts=(2 * sh.counts[-1],) if settled else between)
    return dataclasses.replace(r, reasons=(*_evidence_lines(ev), *ev.opinions(r), *_reasons(groups, None, cores)))


def _measured_peak(start: Recommendation, groups: Sequence[Group],
                   by_n: dict[int, list[float]]) -> Recommendation | None:
    """A peak the measurements show though the model cannot place it (few counts, one repetition
    each): the highest median throughput inside the sweep, the largest count below it by more than
    the run's noise allowance. The answer is then read against the measured best, not a model,
    and the counts around the best are proposed to narrow it."""
    med = sorted((n, float(statistics.median(x))) for n, x in by_n.items() if x)
    top = max(range(len(med)), key=lambda i: med[i][1])
    noise = max(g.noise_pct for g in groups)
    (best_n, best), (last_n, last) = med[top], med[-1]
    if top == len(med) - 1 or 100 * (1 - last / best) <= noise:
        return None

    rule = _reaching_the_best(groups, start.fraction, start.p99_target_ms)

    chosen = rule(by_n)
    if chosen is None:
        return dataclasses.replace(start, verdict="no-count-meets-target", measured_best=best_n,
                                   target_missed=_target_missed(groups, by_n, best, start.fraction,
                                                                start.p99_target_ms))
    counts = sorted(by_n)
    lo, hi = counts[max(top - 1, 0)], counts[top + 1]
    between = sorted({(lo + best_n) // 2, (best_n + hi) // 2, (best_n + (best_n + hi) // 2) // 2} - set(counts))
    why = (f"the measured throughput peaked at {best_n} ({best:,.0f} TPS) and was {100 * (1 - last / best):.0f}% "
           f"lower at {last_n}, more than the {noise:.0f}% noise allowance; the scalability model fitted to "
           f"{len(counts)} counts does not place that peak, so the answer is read against the measured best")
    span = _rule_interval(by_n, noise, rule) or (chosen, chosen)
    return dataclasses.replace(start, verdict="measured-peak", connections=chosen, measured_best=best_n,
                               next_counts=tuple(c for c in between if lo < c < hi), reasons=(why,),
                               counts_interval=(min(span[0], chosen), max(span[1], chosen)), level_tps=best,
                               measured=tuple(counts))

def _reaching_the_best(groups: Sequence[Group], fraction: float, p99_target_ms: float | None
                       ) -> Callable[[Mapping[int, Sequence[float]]], int | None]:
    """The rule read against the best measured: the smallest count whose median TPS reaches the
    fraction of the highest median (measured-peak, saturated; noise_draws apply it to copies)."""
    def rule(d: Mapping[int, Sequence[float]]) -> int | None:
        return _smallest_reaching(groups, d, fraction * max(statistics.median(x) for x in d.values()), p99_target_ms)
    return rule


def _target_missed(groups: Sequence[Group], by_n: Mapping[int, Sequence[float]], peak_tps: float,
                   fraction: float, p99_target_ms: float | None) -> str:
    """What a latency target no count meets costs: the p99 of the smallest count reaching the
    throughput, and the most throughput a count gave under the target (a DBA picks which gives)."""
    if p99_target_ms is None or peak_tps <= 0:
        return ""
    target_tps = fraction * peak_tps
    ordered = sorted(groups, key=lambda g: g.clients)
    reach = next((g for g in ordered if statistics.median(by_n[concurrency_of(g)]) >= target_tps), None)
    under = [(statistics.median(by_n[concurrency_of(g)]), g) for g in ordered
             if g.p99 is not None and g.p99.value <= p99_target_ms]
    out = []
    if reach is not None and reach.p99 is not None:
        out.append(f"{reach.clients} clients reach it with p99 {reach.p99.value:.1f} ms")
    if under:
        tps, g = max(under, key=lambda x: x[0])
        out.append(f"under {p99_target_ms:g} ms the most is {tps:,.0f} TPS ({100 * tps / peak_tps:.0f}% "
                   f"of the peak) at {g.clients} clients")
    else:
        lows = [(g.p99.value, g) for g in ordered if g.p99 is not None]
        if lows:
            p99, low = min(lows, key=lambda x: x[0])
            out.append(f"no count had p99 under {p99_target_ms:g} ms (the lowest: {p99:.1f} ms at "
                       f"{low.clients} clients)")
    return "; ".join(out)


def _smallest_reaching(groups: Sequence[Group], by_n: Mapping[int, Sequence[float]], target_tps: float,
                       p99_target_ms: float | None) -> int | None:
    """The smallest client count whose median TPS reaches the target with its p99 under the
    p99 target, if any."""
    for g in sorted(groups, key=lambda g: g.clients):
        tps = statistics.median(by_n[concurrency_of(g)])
        if tps >= target_tps and (p99_target_ms is None or (g.p99 is not None and g.p99.value <= p99_target_ms)):
            return g.clients
    return None
