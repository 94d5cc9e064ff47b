"""From a sweep to an answer: how many connections, how sure, and why. Pure.

The evidence of one variant decides, in this order:

1. the client set the pace (pgbench's threads busy, sessions waiting on the client): withheld;
   a pooler process near a full core (pooler-bound) at a count: that count and those above it are
   the pooler's ceiling, not the server's, and are left out of the curve (withheld when fewer than
   three counts are left);
2. the measured curve, read as a whole against the noise the run itself shows (analyze/curve.py,
   analyze/noise.py): a step out of line with its neighbours is left out; the curve still grows,
   levels off or peaks;
3. it levels off or peaks: the smallest measured count reaching the fraction (95%) of the level
   of its plateau or peak, within the p99 target when one is set; "for now" when the last
   doubling's growth is beyond what the fraction leaves but within the noise;
4. it still grows and a resource was saturated (the server's CPU, Average Active Sessions on one
   wait class or all together above its CPUs): an answer for now, read against the best so far;
5. it still grows and nothing sampled was saturated: the peak is not reached, and the counts to
   run next go upward; withheld when nothing could be seen of the server's saturation (its CPUs
   unknown and its CPU not sampled: a managed server without --server-cpus).

Every answer carries its 95% interval (the counts the rule picks on copies of the curve moved by
the measured noise), the counts to measure next (those that split the brackets around the answer
and the peak, and each step out of line again), and the second opinions (Kneedle's knee, the
Universal Scalability Law), with whether they agree. Reasons are built from the run's own evidence."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.answer import ANSWERED, Recommendation
from pgknee.analyze.cpus import Machine, machine_of, server_reasons, server_row, server_unseen, system_reasons
from pgknee.analyze.curve import Reading, between, interval, read, widened
from pgknee.analyze.holdcheck import run_hold_check
from pgknee.analyze.network import network_reasons
from pgknee.analyze.noise import Noise, parts
from pgknee.analyze.poolprocs import families as process_families
from pgknee.analyze.poolprocs import pooler_bound, recommend_processes
from pgknee.analyze.poolsize import families, recommend_pool
from pgknee.analyze.saturation import Saturation, kneedle, saturated
from pgknee.analyze.usl import Fit, fit, next_counts, smallest_n_reaching, smallest_n_reaching_each
from pgknee.analyze.view import Group, RunView
from pgknee.analyze.waits import total_aas
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.rules import database_concurrency

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


def _reasons(groups: Sequence[Group], cores: Machine) -> list[str]:
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
    start = Recommendation(variant=v, verdict="not-enough-data", connections=None, fit=None, knee=None,
                           heuristic=n * 2 + spindles if n is not None else None, cores=n,
                           spindles=spindles, fraction=fraction, p99_target_ms=p99_target_ms,
                           checks=_check_counts(groups), concurrency="pool size" if pooled else "clients",
                           cores_source=cores.server.source,
                           repetitions=min((len(g.done) for g in groups), default=1))
    by_n: dict[int, list[float]] = {}  # the repetitions' TPS by database-side concurrency
    for g in groups:
        by_n.setdefault(concurrency_of(g), []).extend(float(s.tps) for s in g.done if s.tps)
    if any(s.rate for g in groups for s in g.steps):
        return dataclasses.replace(start, verdict="open-loop", reasons=tuple(_reasons(groups, cores)),
                                   measured=tuple(sorted(by_n)))
    why = (bound[1],) if bound else ()  # from the first pooler-bound count on, the curve is the pooler's
    if len(by_n) < 3:
        return dataclasses.replace(start, reasons=(*why, *_reasons(groups, cores)), measured=tuple(sorted(by_n)),
                                   verdict="withheld" if why else start.verdict, pooler_bound="".join(why))
    r = _unlike_the_application(view, _below_the_sweep(_decide(start, groups, by_n, cores, view)))
    if bound is None:
        return r
    # never 'run more clients next' past a pooler-bound count: more clients meet the same pooler
    below = tuple(c for c in r.next_counts if c < bound[0])
    return dataclasses.replace(r, reasons=(bound[1], *r.reasons), next_counts=below, pooler_bound=bound[1])


def _unlike_the_application(view: RunView, r: Recommendation) -> Recommendation:
    """A replay of an observed capture that misses the application's hold, idle share or statements
    per transaction at its fewest clients (below any knee, where it must match) replays another
    workload: its count is withheld, with what missed and what to do."""
    check = run_hold_check(view.data)
    if check is None or not check.rows or not r.answered:
        return r
    fewest = min(row.clients for row in check.rows)
    rows = [row for row in check.rows if row.clients == fewest]
    if any(row.within for row in rows):
        return r
    row, c = rows[0], check.captured
    spt = (f", {row.statements_per_transaction:.1f} statements per transaction against "
           f"{c.statements_per_transaction:.1f}" if row.statements_per_transaction is not None
           and c.statements_per_transaction is not None else "")
    why = (f"at its fewest clients ({fewest}) its {', '.join(row.misses)} missed the application's (hold "
           f"{row.hold_ms or 0:.1f} ms against {c.hold_ms:.1f}{spt}): the count would be another workload's "
           f"({r.connections}); 'pgknee workload mix' shows each figure: edit the scripts 'pgknee workload show' "
           "lists (their grouping, their values), or capture again with a longer --observe")
    return dataclasses.replace(r, verdict="withheld", connections=None, counts_interval=None, unlike=why,
                               reasons=(why, *r.reasons))


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


def _progress(view: RunView, groups: Sequence[Group]) -> dict[int, list[list[float]]]:
    """Each completed repetition's per-second TPS (pgbench's progress), by database-side concurrency."""
    out: dict[int, list[list[float]]] = {}
    for g in groups:
        for s in g.done:
            points = view.data.progress.get(s.step_id)
            if points:
                out.setdefault(concurrency_of(g), []).append([tps for _, tps in points])
    return out


def _others(view: RunView, variant: str) -> list[Noise]:
    """The noise sources of the run's other variants (three counts or more), to pool with this one's."""
    out = []
    for v in view.variants():
        groups = [g for g in view.groups if g.variant == v and g.tps is not None]
        if v == variant or len({concurrency_of(g) for g in groups}) < 3:
            continue
        by_n: dict[int, list[float]] = {}
        for g in groups:
            by_n.setdefault(concurrency_of(g), []).extend(float(s.tps) for s in g.done if s.tps)
        out.append(parts(by_n, _progress(view, groups)))
    return out


def _decide(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]], cores: Machine,
            view: RunView) -> Recommendation:
    """Withheld when the client set the pace; else the curve read as a whole decides (module
    docstring): it levels off or peaks, it still grows with a resource saturated, or it still
    grows with nothing saturated."""
    client = _client_bound(groups)
    f = fit(sorted(by_n.items()))
    reading = read(by_n, _progress(view, groups), max(g.noise_pct for g in groups), _others(view, start.variant))
    ev = _Evidence(reading, tuple(saturated(view, groups, cores)), f,
                   kneedle(list(zip(reading.kept, [reading.tps_at(c) for c in reading.kept], strict=True))),
                   start.fraction)
    if client is not None:
        return dataclasses.replace(start, verdict="withheld", reasons=(client, *_reasons(groups, cores)),
                                   fit=f, knee=ev.knee)
    modelled = ev.modelled()
    base = dataclasses.replace(start, fit=f, knee=ev.knee, measured=reading.counts, measured_best=reading.best,
                               level_tps=reading.level, best_tps=reading.tps_at(reading.best), saturated=ev.lines(),
                               noise_pct=100 * reading.noise.sd,
                               noise_source=reading.noise.source, outliers=reading.outliers,
                               modelled_n=modelled[0] if modelled else None,
                               modelled_interval=modelled[1] if modelled else None)
    allowed = _allowed(groups, start.p99_target_ms)
    if reading.shape in ("grows", "unsettled") and ev.saturations:  # more connections meet a saturated resource
        return _saturated(dataclasses.replace(base, settled=reading.shape == "grows"), groups, ev, cores, allowed)
    if reading.shape == "grows" or (reading.shape == "unsettled" and server_unseen(view, groups, cores)):
        # unsettled with nothing seen of the server: whether it grows or saturates, unknown
        return _growing(dataclasses.replace(base, settled=reading.shape == "grows"), groups, ev, cores, view)
    chosen = reading.count(start.fraction, allowed)
    if chosen is None:  # only a p99 target the user set leaves no count
        return dataclasses.replace(base, verdict="no-count-meets-target",
                                   target_missed=_target_missed(groups, by_n, reading.level, start.fraction,
                                                                start.p99_target_ms),
                                   reasons=(*ev.evidence(), *_reasons(groups, cores)))
    span, growing = interval(reading, start.fraction, allowed)
    span = widened(span, chosen)
    r = dataclasses.replace(base, verdict=reading.verdict, connections=chosen,
                            counts_interval=span, settled=reading.shape != "unsettled", growing_share=growing,
                            next_counts=_next(reading, chosen, span))
    return dataclasses.replace(r, reasons=(*ev.evidence(), *ev.opinions(r), *_reasons(groups, cores)))


def _allowed(groups: Sequence[Group], p99_target_ms: float | None) -> set[int] | None:
    """The database-side concurrencies with a count whose p99 is within the target; None without one."""
    if p99_target_ms is None:
        return None
    return {concurrency_of(g) for g in groups if g.p99 is not None and g.p99.value <= p99_target_ms}


def _next(r: Reading, chosen: int, span: tuple[int, int]) -> tuple[int, ...]:
    """The counts to measure next: each step out of line again; one doubling more when the growth
    is not settled; those splitting the brackets inside the interval, the one below the answer
    (would fewer serve?) and the one beside the peak (where between them is it?)."""
    kept = r.kept
    i = kept.index(chosen)
    brackets = set(between(r.counts, *span))
    if i > 0:
        brackets |= set(between(r.counts, kept[i - 1], chosen))
    if r.shape == "peaks" and r.best in kept:
        j = kept.index(r.best)
        side = [kept[k] for k in (j - 1, j + 1) if 0 <= k < len(kept)]
        if side:
            higher = max(side, key=r.tps_at)
            brackets |= set(between(r.counts, min(higher, r.best), max(higher, r.best)))
    upward = (2 * r.counts[-1],) if r.shape == "unsettled" else ()
    return (*r.outliers, *upward, *sorted(brackets))[:4]


def _growing(base: Recommendation, groups: Sequence[Group], ev: _Evidence, cores: Machine,
             view: RunView) -> Recommendation:
    """Throughput still grows beyond the noise and no sampled resource saturated: peak not
    reached, unless nothing of the server could be seen (withheld until it can)."""
    unseen = server_unseen(view, groups, cores)
    unsampled = _unsampled(view, groups, cores)
    return dataclasses.replace(
        base, verdict="not-identified", server_unseen=unseen, unsampled=unsampled,
        reasons=(*ev.evidence(), *([f"whether the server saturated cannot be seen: {unseen}"] if unseen else []),
                 *([f"whether a resource saturated is unknown: {unsampled}"] if unsampled and not unseen else []),
                 *_reasons(groups, cores)),
        next_counts=(*base.outliers, *next_counts(list(base.measured), cores.server.n)))


def _unsampled(view: RunView, groups: Sequence[Group], m: Machine) -> str:
    """What left the server's saturation unseen on a run that sampled neither its CPU nor its
    wait events against known CPUs; '' when something was sampled."""
    cpu = any(g.system.peak_cpu is not None for g in groups) if m.local else False
    cpu = cpu or any(server_row(view.data, g) is not None for g in groups)
    waits = any(g.snapshots for g in groups) and m.server.n is not None
    if cpu or waits:
        return ""
    missing = ["the CPU was not sampled (--os-interval 0)"]  # (cpu is False here)
    missing.append("no wait profile was taken (--sample-interval 0)" if not any(g.snapshots for g in groups)
                   else "the server's CPUs are unknown, so no wait class could be read against them")
    return " and ".join(missing)


@dataclass(frozen=True)
class _Evidence:
    """What the sweep shows of one variant: the curve read, the saturated resources, the model's
    fit, Kneedle's knee."""

    reading: Reading
    saturations: tuple[Saturation, ...]
    fit: Fit
    knee: int | None
    fraction: float

    def lines(self) -> tuple[str, ...]:
        """Each saturated resource, short (the headline's; the reasons have the details)."""
        return tuple(s.short() for s in self.saturations)

    def evidence(self) -> tuple[str, ...]:
        """The reading (the noise, the steps out of line, the shape), then each saturated resource."""
        return (*self.reading.lines(), *(s.line() for s in self.saturations))

    def modelled(self) -> tuple[float, tuple[float, float] | None] | None:
        """Where the model crosses the fraction of its peak (or of a ceiling reached inside the
        sweep), with its bootstrap's 95% interval; None when it places neither."""
        f = self.fit
        if not f.identified and not (math.isfinite(f.peak_x.hi) and f.sigma.lo > 0.05):
            return None
        ceiling = 2.0 * f.max_n
        n = smallest_n_reaching(f.params, self.fraction, ceiling)
        if n is None:
            return None
        each = smallest_n_reaching_each(f.samples, self.fraction, ceiling)
        draws = each[np.isfinite(each)]
        span = (float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))) if draws.size else None
        return n, span

    def opinions(self, r: Recommendation) -> tuple[str, ...]:
        """Where the second opinions agree with the answer or not: inside its interval, or one
        measured step from it."""
        if r.connections is None:
            return ()
        counts = self.reading.counts
        lo, hi = r.counts_interval or (r.connections, r.connections)
        i = counts.index(r.connections)  # the count read off this reading: one of its counts
        near = set(counts[max(i - 1, 0):i + 2]) | {c for c in counts if lo <= c <= hi}

        def agrees(c: float) -> str:
            return "agrees" if (min(near) <= c <= max(near)) else "disagrees"

        out = []
        if self.knee is not None:
            out.append(f"Kneedle (Satopää et al. 2011) places the knee of the measured curve at {self.knee} clients: "
                       f"it {agrees(self.knee)} with {r.connections}")
        else:
            out.append("Kneedle (Satopää et al. 2011) detects no knee in the measured curve")
        f = self.fit
        if r.modelled_n is not None:
            what = "peak" if f.identified else "ceiling"
            first = min((c for c in counts if c >= r.modelled_n), default=counts[-1])
            span = (f" (its 95% interval {r.modelled_interval[0]:.1f}..{r.modelled_interval[1]:.1f})"
                    if r.modelled_interval else "")
            out.append(f"the scalability model (USL) reaches {self.fraction:.0%} of its modelled {what} at "
                       f"{r.modelled_n:.1f}{span}, the first count measured past it {first}: it {agrees(first)}")
        else:
            out.append("the scalability model (USL) places neither a peak nor a ceiling (σ "
                       f"{f.params.sigma:.2f} [{f.sigma.lo:.2f}..{f.sigma.hi:.2f}])")
        return tuple(out)


def _saturated(base: Recommendation, groups: Sequence[Group], ev: _Evidence, cores: Machine,
               allowed: set[int] | None) -> Recommendation:
    """A resource saturated while throughput still grew beyond the noise: an answer for now, read
    against the best so far, never counts upward but one doubling once repetitions confirm it."""
    r = ev.reading
    chosen = r.count(base.fraction, allowed, for_now=True)
    if chosen is None:
        return dataclasses.replace(base, verdict="no-count-meets-target",
                                   target_missed=_target_missed(groups, {c: [r.tps_at(c)] for c in r.counts},
                                                                r.level, base.fraction, base.p99_target_ms),
                                   reasons=(*ev.evidence(), *_reasons(groups, cores)))
    span = widened(interval(r, base.fraction, allowed, for_now=True)[0], chosen)
    inside = between(r.counts, span[0], r.counts[-1])
    # every count between measured, and the growth beyond the noise over several repetitions: one doubling
    # more shows where it ends (never the 4-doubling climb of a curve with nothing saturated)
    settled = not inside and base.repetitions >= 3
    out = dataclasses.replace(base, verdict="saturated", connections=chosen, counts_interval=span,
                              next_counts=(*r.outliers, *((2 * r.counts[-1],) if settled else inside)))
    return dataclasses.replace(out, reasons=(*ev.evidence(), *ev.opinions(out), *_reasons(groups, cores)))


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
