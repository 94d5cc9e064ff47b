"""From a sweep to an answer: how many connections, how sure, and why. Pure.

The throughput curve of one variant is fitted with the Universal Scalability Law on the
database-side concurrency (a pool caps it). When the fit identifies a peak, the
recommendation is the smallest measured count whose throughput reaches a fraction of the
modelled peak (95% by default) and whose measured p99 stays under a target, if given;
its interval comes from the bootstrap fits. When the peak is not identified, it says so
and proposes the counts to run next. Reasons are built from the run's own evidence."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pgknee.analyze.machine import Machine, machine_of, server_reasons, system_reasons
from pgknee.analyze.network import network_reasons
from pgknee.analyze.records import Group, RunView
from pgknee.analyze.usl import Fit, fit, next_counts, smallest_n_reaching, smallest_n_reaching_each
from pgknee.analyze.waits import total_aas
from pgknee.keys import CheckId, CheckStatus
from pgknee.rules import database_concurrency


@dataclass(frozen=True)
class Recommendation:
    variant: str
    verdict: str  # 'recommended' | 'measured-peak' | 'not-identified' | 'withheld' | 'not-enough-data'
    # | 'no-count-meets-target' | 'open-loop'
    connections: int | None  # the recommended (measured) count
    interval: tuple[float, float] | None  # from the bootstrap fits
    modelled_n: float | None  # the model's own smallest N reaching the fraction
    fit: Fit | None
    knee: int | None
    heuristic: int | None  # (cores x 2) + spindles, with the server's cores; None when they are unknown
    cores: int | None  # the server's CPUs (analyze/machine.py)
    spindles: int
    fraction: float
    p99_target_ms: float | None
    next_counts: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()
    checks: dict[CheckId, tuple[int, int]] = field(default_factory=dict)  # check -> (ok, warn) over the steps
    concurrency: str = "clients"  # or 'pool size' when a pooler caps it
    measured: tuple[int, ...] = ()  # the distinct database-side concurrencies measured
    cores_source: str = ""  # where the server's CPU count came from, or why it is unknown
    measured_best: int | None = None  # 'measured-peak': the count of the highest measured throughput

    def headline(self) -> str:
        v = self.variant
        if self.verdict == "recommended" and self.connections is not None:
            lo, hi = self.interval or (math.nan, math.nan)
            return (f"{v}: use {self.connections} connections, the smallest count measured that reaches "
                    f"{self.fraction:.0%} of the modelled peak"
                    + (f" with p99 under {self.p99_target_ms:g} ms" if self.p99_target_ms else "")
                    + (f" (the model crosses {self.fraction:.0%} at {self.modelled_n:.1f}, 95% interval "
                       f"{lo:.1f}..{hi:.1f})" if self.modelled_n is not None else ""))
        if self.verdict == "measured-peak" and self.connections is not None:
            more = (f"measure {', '.join(map(str, self.next_counts))} clients too to narrow it (pgknee run --extend "
                    "RUN adds them to this run)" if self.next_counts else "repetitions (--reps 3) would narrow it")
            return (f"{v}: use {self.connections} connections for now, the smallest count measured within "
                    f"{self.fraction:.0%} of the best measured throughput (at {self.measured_best}); the model does "
                    f"not pin the peak down yet: {more}")
        if self.verdict == "not-identified":
            return (f"{v}: peak not reached — the sweep does not show where throughput stops growing; run "
                    f"{', '.join(map(str, self.next_counts))} clients next (pgknee run --clients ...)")
        if self.verdict == "withheld":
            return f"{v}: no recommendation — the client, not the database, was the bottleneck"
        if self.verdict == "open-loop":
            return (f"{v}: no recommendation — an open-loop variant (--rate) runs at its schedule, so its throughput "
                    "does not show what more connections could do; read its latency and schedule lag instead")
        if self.verdict == "no-count-meets-target":
            return f"{v}: no measured count meets both {self.fraction:.0%} of the peak and the p99 target"
        if self.concurrency == "pool size" and len(self.measured) < 3:
            return (f"{v}: not enough data for a scalability model — the pool caps the database-side concurrency, "
                    f"so the sweep measured only {', '.join(map(str, self.measured))}; sweep the pool size "
                    "instead (e.g. pool=2,4,8,16) to see which one serves best")
        return f"{v}: not enough data for a scalability model (needs at least three client counts)"


def recommend_all(view: RunView, variants: Sequence[str] | None = None, *, fraction: float = 0.95,
                  p99_target_ms: float | None = None, spindles: int = 0) -> list[Recommendation]:
    """One recommendation per variant (all of the run's by default)."""
    return [recommend(view, v, fraction=fraction, p99_target_ms=p99_target_ms, spindles=spindles)
            for v in (variants or view.variants())]


def concurrency_of(g: Group) -> int:
    """The database-side concurrency of a client count (rules.database_concurrency: a managed
    pool and its reserve cap it)."""
    s = g.steps[0]
    return database_concurrency(g.clients, s.pooler_kind, s.pool_size, s.pool_reserve)


def measured_points(view: RunView, variant: str) -> list[tuple[int, float]]:
    """(database-side concurrency, TPS) of each completed repetition of a variant, by client count."""
    groups = sorted((g for g in view.groups if g.variant == variant), key=lambda g: g.clients)
    return [(concurrency_of(g), s.tps) for g in groups for s in g.done if s.tps]


def knee(points: Sequence[tuple[int, float]]) -> int | None:
    """The count where the curve bends most (the largest distance above the straight line
    from the first point to the highest one, both axes scaled to 0..1)."""
    if len(points) < 3:
        return None
    top = max(range(len(points)), key=lambda i: points[i][1])
    rising = points[:top + 1]
    if len(rising) < 3:
        return rising[-1][0]
    xs = np.array([p[0] for p in rising], dtype=float)
    ys = np.array([p[1] for p in rising], dtype=float)
    xn = (xs - xs[0]) / (xs[-1] - xs[0]) if xs[-1] > xs[0] else xs * 0
    yn = (ys - ys[0]) / (ys[-1] - ys[0]) if ys[-1] > ys[0] else ys * 0
    return int(xs[int(np.argmax(yn - xn))])


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
    cores = machine_of(view.data.env, view.data.run.target_kind)
    cores = dataclasses.replace(cores, server_evidence=tuple(server_reasons(view, groups, cores.server)))
    pooled = any(g.steps[0].pooler_kind == "managed" for g in groups)
    n = cores.server.n
    start = Recommendation(variant=v, verdict="not-enough-data", connections=None, interval=None, modelled_n=None,
                           fit=None, knee=None, heuristic=n * 2 + spindles if n is not None else None, cores=n,
                           spindles=spindles, fraction=fraction, p99_target_ms=p99_target_ms,
                           checks=_check_counts(groups), concurrency="pool size" if pooled else "clients",
                           cores_source=cores.server.source)
    by_n: dict[int, list[float]] = {}  # the repetitions' TPS by database-side concurrency
    for g in groups:
        by_n.setdefault(concurrency_of(g), []).extend(float(s.tps) for s in g.done if s.tps)
    if any(s.rate for g in groups for s in g.steps):
        return dataclasses.replace(start, verdict="open-loop", reasons=tuple(_reasons(groups, None, cores)),
                                   measured=tuple(sorted(by_n)))
    if len(by_n) < 3:
        return dataclasses.replace(start, reasons=tuple(_reasons(groups, None, cores)), measured=tuple(sorted(by_n)))
    return _from_the_model(start, groups, by_n, cores)


def _check_counts(groups: Sequence[Group]) -> dict[CheckId, tuple[int, int]]:
    """How many steps each check passed and warned on."""
    checks: dict[CheckId, tuple[int, int]] = {}
    for g in groups:
        for _rep, cs in g.checks:
            for c in cs:
                ok, warn = checks.get(c.id, (0, 0))
                checks[c.id] = (ok + (c.status is CheckStatus.OK), warn + (c.status is CheckStatus.WARN))
    return checks


def _from_the_model(start: Recommendation, groups: Sequence[Group], by_n: dict[int, list[float]],
                    cores: Machine) -> Recommendation:
    """The USL fitted to the throughput by concurrency: withheld when the client set the pace,
    counts to run next when it identifies no peak (nor a plateau), else the smallest measured
    count reaching the fraction of the modelled peak within the p99 target."""
    fraction = start.fraction
    client = _client_bound(groups)
    f = fit(sorted(by_n.items()))
    kn = knee([(n, float(np.median(x))) for n, x in sorted(by_n.items()) if x])  # on the fit's axis
    if client is not None:
        return dataclasses.replace(start, verdict="withheld", reasons=(client, *_reasons(groups, None, cores)),
                                   fit=f, knee=kn)
    # no peak in the data, but a plateau: strong contention (σ) bounds the throughput at λ/σ,
    # and the model reaches the fraction of that bound inside the measured range
    plateau = (not f.identified and math.isfinite(f.peak_x.hi) and f.sigma.lo > 0.05
               and smallest_n_reaching(f.params, fraction, f.max_n) is not None)
    if not f.identified and not plateau:
        seen = _measured_peak(start, groups, by_n)
        if seen is not None:
            return dataclasses.replace(seen, fit=f, knee=kn, reasons=(*seen.reasons, *_reasons(groups, None, cores)))
        return dataclasses.replace(start, verdict="not-identified", reasons=tuple(_reasons(groups, None, cores)),
                                   fit=f, knee=kn,
                                   next_counts=tuple(next_counts([g.clients for g in groups], cores.server.n)))
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
    return dataclasses.replace(start, verdict="recommended" if chosen is not None else "no-count-meets-target",
                               reasons=tuple(reasons), fit=f, knee=kn, connections=chosen, interval=interval,
                               modelled_n=smallest_n_reaching(f.params, fraction, ceiling))


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
    chosen = _smallest_reaching(groups, by_n, start.fraction * best, start.p99_target_ms)
    if chosen is None:
        return dataclasses.replace(start, verdict="no-count-meets-target", measured_best=best_n)
    counts = sorted(by_n)
    lo, hi = counts[max(top - 1, 0)], counts[top + 1]
    between = sorted({(lo + best_n) // 2, (best_n + hi) // 2, (best_n + (best_n + hi) // 2) // 2} - set(counts))
    why = (f"the measured throughput peaked at {best_n} ({best:,.0f} TPS) and was {100 * (1 - last / best):.0f}% "
           f"lower at {last_n}, more than the {noise:.0f}% noise allowance; the scalability model fitted to "
           f"{len(counts)} counts does not place that peak, so the answer is read against the measured best")
    return dataclasses.replace(start, verdict="measured-peak", connections=chosen, measured_best=best_n,
                               next_counts=tuple(c for c in between if lo < c < hi), reasons=(why,))


def _smallest_reaching(groups: Sequence[Group], by_n: dict[int, list[float]], target_tps: float,
                       p99_target_ms: float | None) -> int | None:
    """The smallest client count whose median TPS reaches the target with its p99 under the
    p99 target, if any."""
    for g in sorted(groups, key=lambda g: g.clients):
        tps = statistics.median(by_n[concurrency_of(g)])
        if tps >= target_tps and (p99_target_ms is None or (g.p99 is not None and g.p99.value <= p99_target_ms)):
            return g.clients
    return None
