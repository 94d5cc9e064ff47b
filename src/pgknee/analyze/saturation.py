"""Where throughput stops growing, read from all the evidence a sweep holds. Pure.

Three lines of evidence, each of which a DBA would read on their own:

* the measured curve's shape (`shape_of`): the growth of the median throughput over the last
  doubling of the count, against the run's noise allowance; the counts whose throughput stays
  within that allowance of the best (the plateau); and Little's law, which at saturation makes
  latency grow in proportion to the clients;
* a resource that was saturated (`saturated`): the server's CPU (its own /proc, or this machine's
  when server and client share it), sessions queued on one wait class beyond the server's CPUs
  (Average Active Sessions); a busy client withholds the answer and a pooler process near a full
  core takes its steps out of the curve, elsewhere (analyze/recommend.py);
* a published knee method as a second opinion (`kneedle`: Satopää, Albrecht, Irwin and Raghavan,
  "Finding a 'Kneedle' in a Haystack", ICDCSW 2011), beside the Universal Scalability Law that
  analyze/usl.py fits.

`noise_draws` puts plausible noise on the measured curve so that a rule that picks a count can
say which counts that noise would have picked instead: the answer's interval."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.machine import Machine, server_row
from pgknee.analyze.records import Group, RunView
from pgknee.rules import cpu_saturated

DRAWS = 2000  # noise draws for an answer's interval
PLAUSIBLE = 0.8  # the answer's interval: the counts the middle 80% of the noise draws picked


@dataclass(frozen=True)
class Shape:
    """The measured curve of one variant: median TPS by database-side concurrency."""

    counts: tuple[int, ...]
    tps: tuple[float, ...]  # the median of the repetitions at each count
    noise_pct: float  # the run's noise allowance (--noise-threshold)
    growth_pct: float | None  # TPS growth over the last doubling (from `doubling_from` to the largest count)
    doubling_from: int | None  # the largest count at or below half the largest; None when there is none
    plateau: tuple[int, ...]  # the counts from which TPS stays within the noise allowance of the best
    latency_ratio: float | None  # mean latency at the largest count over that at `doubling_from`

    @property
    def best_n(self) -> int:
        return self.counts[int(np.argmax(self.tps))]

    @property
    def best(self) -> float:
        return max(self.tps)

    @property
    def decline_pct(self) -> float:
        """How far the largest count fell below the best, %."""
        return 100.0 * (1.0 - self.tps[-1] / self.best) if self.best > 0 else 0.0

    @property
    def declines(self) -> bool:
        """A peak inside the sweep: the largest count below the best by more than the noise."""
        return self.best_n != self.counts[-1] and self.decline_pct > self.noise_pct

    @property
    def grows(self) -> bool:
        """Throughput still grew over the last doubling by more than the noise allowance."""
        return self.growth_pct is not None and self.growth_pct > self.noise_pct

    @property
    def levels_off(self) -> bool:
        """Flat within the noise allowance over the last doubling, and no decline beyond it."""
        return self.growth_pct is not None and not self.grows and not self.declines and len(self.plateau) >= 2

    @property
    def level(self) -> float:
        """The plateau's throughput: the median of its counts' medians (not the best of them: the
        highest of noisy values is biased up)."""
        return float(statistics.median(self.tps_at(c) for c in (self.plateau or self.counts)))

    def tps_at(self, n: int) -> float:
        return self.tps[self.counts.index(n)]


def shape_of(by_n: Mapping[int, Sequence[float]], latency: Mapping[int, float], noise_pct: float) -> Shape:
    """`by_n`: the repetitions' TPS by concurrency; `latency`: the median mean latency (ms) by
    concurrency, where measured."""
    counts = tuple(sorted(n for n, x in by_n.items() if x))
    tps = tuple(float(statistics.median(by_n[n])) for n in counts)
    top = counts[-1]
    below = [n for n in counts if n <= top / 2]
    start = below[-1] if below else None
    growth = 100.0 * (tps[-1] / tps[counts.index(start)] - 1.0) if start is not None and tps[counts.index(start)] > 0 \
        else None
    floor = (1.0 - noise_pct / 100.0) * max(tps)
    first = len(counts)
    while first > 0 and tps[first - 1] >= floor:
        first -= 1
    lat = latency.get(top), latency.get(start) if start is not None else None
    return Shape(counts=counts, tps=tps, noise_pct=noise_pct, growth_pct=growth, doubling_from=start,
                 plateau=counts[first:], latency_ratio=lat[0] / lat[1] if lat[0] and lat[1] else None)


def shape_reason(s: Shape, unit: str = "clients") -> str | None:
    """What the curve's shape says, in one line (`unit`: what the counts count)."""
    if s.growth_pct is None or s.doubling_from is None:
        return None
    top, start = s.counts[-1], s.doubling_from
    little = (f"; latency ×{s.latency_ratio:.1f} for ×{top / start:.1f} the {unit}" if s.latency_ratio else "")
    queue = s.latency_ratio is not None and s.latency_ratio >= 0.75 * top / start  # latency in proportion
    if s.levels_off:
        plateau = f"{s.plateau[0]}..{s.plateau[-1]}" if len(s.plateau) > 1 else str(s.plateau[0])
        return (f"throughput levels off: {s.growth_pct:+.0f}% from {start} to {top} {unit}, within the "
                f"{s.noise_pct:g}% noise allowance, and {plateau} {unit} all stay within it of the best "
                f"({s.best:,.0f} TPS at {s.best_n}){little}"
                + (" (Little's law at saturation: added connections only queue)" if queue else ""))
    if s.grows:
        return (f"throughput still grew {s.growth_pct:+.0f}% from {start} to {top} {unit}, more than the "
                f"{s.noise_pct:g}% noise allowance{little}")
    if s.declines:
        return (f"throughput fell {s.decline_pct:.0f}% from its best ({s.best:,.0f} TPS at {s.best_n}) to {top} "
                f"{unit}, more than the {s.noise_pct:g}% noise allowance")
    return None


@dataclass(frozen=True)
class Saturation:
    """A resource that was saturated, from the first count where it was."""

    resource: str  # 'server CPU', 'CPU' (this machine's, server and client), 'wait class LWLock',
    # 'server sessions' (database time above the CPUs)
    clients: int
    detail: str

    def short(self) -> str:
        return f"{self.resource} saturated from {self.clients} clients"

    def line(self) -> str:
        return f"{self.short()} ({self.detail})"


def saturated(view: RunView, groups: Sequence[Group], m: Machine) -> list[Saturation]:
    """Each resource that was saturated, at the first count where it was (by client count)."""
    found: dict[str, Saturation] = {}
    for g in sorted(groups, key=lambda g: g.clients):
        for s in (_cpu(view, g, m), *_wait_classes(g, m)):
            if s is not None and s.resource not in found:
                found[s.resource] = s
    return list(found.values())


def _cpu(view: RunView, g: Group, m: Machine) -> Saturation | None:
    """The server's own CPU samples; else, when the server runs on this machine, this machine's."""
    r = server_row(view.data, g)
    if r is not None:
        if cpu_saturated(r.peak_cpu, r.mean_cpu):
            return Saturation("server CPU", g.clients, f"its own /proc: mean {r.mean_cpu:.0f}%, peak {r.peak_cpu:.0f}%"
                              + (f" of {m.server.n} CPUs" if m.server.n is not None else ""))
        return None
    s = g.system
    if not m.local or s.peak_cpu is None or s.mean_cpu is None:
        return None
    if cpu_saturated(s.peak_cpu, s.mean_cpu):
        return Saturation("CPU", g.clients, f"this machine's, shared by the server and pgbench: mean "
                          f"{s.mean_cpu:.0f}%, peak {s.peak_cpu:.0f}%"
                          + (f" of {m.client} CPUs" if m.client is not None else ""))
    return None


def _wait_classes(g: Group, m: Machine) -> list[Saturation]:
    """A wait class (CPU, running, counted as one) whose Average Active Sessions exceed the
    server's CPUs: sessions queue on it; and the sessions at work, all classes but the client's
    (the database time), above the CPUs: more sessions running or waiting in the server than it
    has CPUs, the rule of thumb that reads a server's saturation without its /proc."""
    cpus = m.server.n
    if cpus is None or not g.snapshots:
        return []
    by_class: dict[str, float] = {}
    for w in g.waits:
        if w.wait_event_type not in ("Client", "Activity", "Timeout"):  # the client's time, not the server's
            by_class[w.wait_event_type] = by_class.get(w.wait_event_type, 0.0) + w.aas
    out = [Saturation(f"wait class {cls}", g.clients, f"AAS {aas:.2f} above the server's {cpus} CPUs")
           for cls, aas in sorted(by_class.items(), key=lambda x: -x[1]) if aas > cpus]
    busy = sum(by_class.values())
    if busy > cpus and not out:  # no one class above them, yet more sessions at work than CPUs: they queue
        out.append(Saturation("server sessions", g.clients, f"AAS {busy:.2f} at work (CPU and server waits, not "
                                                            f"the client's) above the server's {cpus} CPUs"))
    return out


def kneedle(points: Sequence[tuple[int, float]], sensitivity: float = 1.0) -> int | None:
    """The knee of a concave increasing curve by Kneedle (offline, no smoothing), on the rising
    part of the measured curve (up to its highest point): both axes scaled to 0..1, the difference
    curve y - x, and the first of its local maxima after which it falls below that maximum less
    `sensitivity` times the mean step of x. None when no knee is detected (a straight line, a
    curve still bending up). Checked against the kneed package's KneeLocator in the tests."""
    top = max(range(len(points)), key=lambda i: points[i][1]) if points else 0
    rising = points[:top + 1]
    if len(rising) < 3:
        return None
    x = np.array([p[0] for p in rising], dtype=float)
    y = np.array([p[1] for p in rising], dtype=float)
    xn, yn = (x - x.min()) / np.ptp(x), (y - y.min()) / np.ptp(y) if np.ptp(y) > 0 else y * 0
    diff = yn - xn
    step = sensitivity * float(np.abs(np.diff(xn)).mean())
    maxima = _extrema(diff, np.greater_equal)
    minima = _extrema(diff, np.less_equal)
    threshold, at, active = math.nan, -1, True
    for i in range(int(maxima[0]) if maxima.size else len(diff), len(diff) - 1):
        if i in maxima:
            threshold, at, active = float(diff[i]) - step, i, True
        if i in minima:
            threshold, active = 0.0, False
        if active and diff[i + 1] < threshold:
            return int(x[at])
    return None


def _extrema(a: np.ndarray, compare: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The indices of a's points that compare true with both neighbours, an end compared with
    itself on its open side (scipy's argrelextrema with order 1 and mode 'clip', as kneed has it)."""
    before, after = np.concatenate(([a[0]], a[:-1])), np.concatenate((a[1:], [a[-1]]))
    return np.flatnonzero(compare(a, before) & compare(a, after))


def relative_sd(by_n: Mapping[int, Sequence[float]], noise_pct: float) -> float:
    """The relative noise of one repetition's TPS: from the repetitions where every count has two
    or more (their pooled relative standard deviation, at least a quarter of the allowance), else
    the noise allowance taken as two standard deviations."""
    groups = [np.asarray(x, dtype=float) for x in by_n.values() if len(x) >= 2]
    if groups and len(groups) == len(by_n):
        var = [float(np.var(x / np.mean(x), ddof=1)) for x in groups if np.mean(x) > 0]
        if var:
            return max(math.sqrt(statistics.fmean(var)), noise_pct / 400.0)
    return noise_pct / 200.0


def noise_draws(by_n: Mapping[int, Sequence[float]], noise_pct: float, draws: int = DRAWS, seed: int = 7
                ) -> list[dict[int, list[float]]]:
    """`draws` copies of the measured TPS, each repetition moved by a normal error of the run's
    own noise (relative_sd); with several repetitions they are also resampled with replacement."""
    rng = np.random.default_rng(seed)
    sd = relative_sd(by_n, noise_pct)
    out: list[dict[int, list[float]]] = [{} for _ in range(draws)]
    for n, values in sorted(by_n.items()):
        v = np.asarray(values, dtype=float)
        picked = v[rng.integers(0, len(v), size=(draws, len(v)))] if len(v) >= 2 else np.tile(v, (draws, 1))
        moved = picked * (1.0 + rng.normal(0.0, sd, size=picked.shape))
        for i in range(draws):
            out[i][n] = moved[i].tolist()
    return out


def count_interval(chosen: Sequence[int | None], middle: float = PLAUSIBLE) -> tuple[int, int] | None:
    """The counts picked by the middle `middle` share of the draws that picked one (the lower and
    upper percentiles taken as measured counts, never between them)."""
    picked = sorted(c for c in chosen if c is not None)
    if not picked:
        return None
    tail = (1.0 - middle) / 2.0
    lo = picked[int(math.floor(tail * (len(picked) - 1)))]
    hi = picked[int(math.ceil((1.0 - tail) * (len(picked) - 1)))]
    return lo, hi
