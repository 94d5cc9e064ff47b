"""The measured curve read as a whole: where throughput grows, levels off or falls, judged against
the run's own noise (analyze/noise.py), and the count a DBA picks from it, with its interval. Pure.

A throughput curve against connections rises, may level off and may fall, in that order
(unimodal). What a DBA reads in a sweep, made a rule, on the logarithm of each count's median TPS:

* **a step out of line**: a count inside the sweep at least 5% below both its neighbours and by
  more than the noise allows (one-sided at 1%, the noise measured without it, from as little as
  one degree of freedom). A unimodal curve has no such dip: it is a checkpoint or a noisy
  neighbour. It is left out of the reading and measured again. A dip every repetition of its count
  shows is real, and stays in.
* **growth**: from the best count at or below half the largest to the largest, per doubling
  (the best, not the one at half: a low step there does not make a plateau grow). The curve still
  grows when that is beyond what the answer's fraction leaves (95% of the best: 5.3% a doubling)
  and beyond the noise (two-sided t test at 5%); beyond the fraction but within the noise, it is
  unsettled: levelling off for now.
* **decline**: the largest count below the best beyond the noise (one-sided t test at 1%).
* **the plateau**: the widest run of counts around the best that one level explains within the
  noise (_plateau); its level is the higher end of the line fitted to them, weighted by their
  repetitions: their mean on a flat plateau, its top on a slow rise the noise hides (not the best
  alone: the highest of noisy values is biased up).
* **the count**: the smallest count, not out of line, reaching the fraction of the plateau's
  level (and within the p99 target, when one is set). A peak between two measured counts is
  answered by the one that serves best; the counts to measure next split the brackets.

**The interval**: the same rule applied to DRAWS copies of the curve, each count moved by noise
drawn as measured (its degrees of freedom too: a noise estimate from few counts is itself
uncertain); the counts picked by the middle 95% of the copies that pick one. bench/calibration.py
measures how often it holds the right count, by family of curve, noise and repetitions."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.noise import Noise, measure

DRAWS = 2000
LEVEL = 0.95  # the interval's level, stated wherever it is printed
DIP_P = 0.99  # a step out of line: below both neighbours, one-sided at 1% (the normal's point: few counts
# leave the noise few degrees of freedom, and Student's t would then see no step out of line at all)
GROWS_P = 0.975  # growth beyond the noise: two-sided at 5%
DECLINE_P = 0.99  # decline beyond the noise: one-sided at 1%
NORMAL_DIP = statistics.NormalDist().inv_cdf(DIP_P)  # (the standard library's: scipy loads when needed)
MIN_DIP = 0.05  # and at least 5% below: a noise measured with one degree of freedom may be tiny by chance
_MEDIAN_VAR = {1: 1.0, 2: 0.5, 3: 0.449, 4: 0.343, 5: 0.287}  # var of a median of k normals, in sigma^2


def median_var(k: int) -> float:
    """The variance of the median of k repetitions, in units of one repetition's."""
    return _MEDIAN_VAR.get(k, math.pi / (2.0 * k))


@dataclass(frozen=True)
class Dip:
    """A count below both its neighbours: out of line (left out), or reproduced by every repetition."""

    count: int
    tps: float
    neighbours: tuple[int, int]
    depth: float  # below the lower neighbour, as a fraction (0.15: 15% below)
    t: float  # the depth over its standard error
    outlier: bool

    def line(self) -> str:
        a, b = self.neighbours
        if self.outlier:
            return (f"the step at {self.count} clients ({self.tps:,.0f} TPS) is {100 * self.depth:.0f}% below both "
                    f"its neighbours ({a} and {b}), {self.t:.1f} times its standard error: out of line (a checkpoint "
                    "or a noisy neighbour), so it is left out of the reading and proposed again")
        return (f"throughput at {self.count} clients was below both its neighbours ({a} and {b}) in every "
                f"repetition, {100 * self.depth:.0f}% below the lower: a dip that reproduces, so it is kept")


@dataclass(frozen=True)
class Growth:
    """TPS per doubling from `ref` (the best at or below half the largest) to `top` (the largest)."""

    ref: int
    top: int
    per_doubling: float  # relative: 0.08 is 8% a doubling
    se: float  # its standard error (relative)
    grows: bool  # beyond the fraction's margin and the noise
    unsettled: bool  # beyond the margin, within the noise


@dataclass(frozen=True)
class Reading:
    """A variant's curve read as a whole."""

    counts: tuple[int, ...]  # every count measured, ascending
    tps: tuple[float, ...]  # each count's median TPS
    reps: tuple[int, ...]  # each count's repetitions
    noise: Noise
    dips: tuple[Dip, ...]
    growth: Growth | None
    best: int  # the count of the highest median (steps out of line left out)
    declines: bool
    decline: float  # how far the largest count fell below the best (fraction)
    plateau: tuple[int, ...]  # the counts not below the best beyond the noise
    level: float  # the plateau's level (TPS)

    @property
    def outliers(self) -> tuple[int, ...]:
        return tuple(d.count for d in self.dips if d.outlier)

    @property
    def kept(self) -> tuple[int, ...]:
        """The counts read (the steps out of line left out)."""
        return tuple(c for c in self.counts if c not in self.outliers)

    @property
    def shape(self) -> str:
        """'grows', 'peaks', 'levels-off' or 'unsettled' (levelling off for now: growth beyond the
        margin, within the noise)."""
        if self.growth is not None and self.growth.grows:
            return "grows"
        if self.declines:
            return "peaks"
        return "unsettled" if self.growth is not None and self.growth.unsettled else "levels-off"

    @property
    def verdict(self) -> str:
        """What a count read off it answers: 'peaks', else 'levels-off' (for now, when unsettled)."""
        return "peaks" if self.shape == "peaks" else "levels-off"

    def tps_at(self, n: int) -> float:
        return self.tps[self.counts.index(n)]

    def count(self, fraction: float, allowed: Iterable[int] | None = None, for_now: bool = False) -> int | None:
        """The smallest count read (and allowed: within the p99 target) reaching `fraction` of
        the plateau's level; None when the curve still grows (unless `for_now`: an answer for now,
        read against the best so far, when a saturated resource says more connections buy little)."""
        if self.shape == "grows" and not for_now:
            return None
        ok = set(self.kept if allowed is None else set(allowed) & set(self.kept))
        level = self.tps_at(self.best) if for_now else self.level
        return next((c for c in self.kept if c in ok and self.tps_at(c) >= fraction * level), None)

    def lines(self, unit: str = "clients") -> tuple[str, ...]:
        """What the reading says, for the reasons: the noise, the steps out of line, the shape."""
        return (self.noise.text(), *(d.line() for d in self.dips), *filter(None, [self.shape_line(unit)]))

    def shape_line(self, unit: str = "clients") -> str | None:
        g, noise = self.growth, f"{100 * self.noise.sd:.1f}%"
        plateau = (f"{self.plateau[0]}..{self.plateau[-1]}" if len(self.plateau) > 1 else str(self.plateau[0]))
        level = f"the plateau ({plateau} {unit}) stands at {self.level:,.0f} TPS"
        if g is None:
            return None
        grew = (f"{100 * g.per_doubling:+.1f}% a doubling (±{100 * g.se:.1f}%) from {g.ref} to {g.top} {unit}")
        if g.grows:
            return f"throughput still grows: {grew}, beyond the noise ({noise}) and beyond what 95% of the best leaves"
        if self.declines:
            best = f"{self.best} ({self.tps_at(self.best):,.0f} TPS)"
            return (f"throughput peaks: best at {best}, {100 * self.decline:.0f}% lower at {self.counts[-1]}, beyond "
                    f"the noise ({noise}); {level}")
        if g.unsettled:
            return (f"throughput levels off for now: {grew}, within the noise ({noise}), so whether it still grows "
                    f"is not settled; {level}")
        return f"throughput levels off: {grew}; {level}"


def read(by_n: Mapping[int, Sequence[float]], progress: Mapping[int, Sequence[Sequence[float]]] | None = None,
         allowance_pct: float = 10.0, others: Sequence[Noise] = ()) -> Reading:
    """`by_n`: the repetitions' TPS by count (three counts at least); `progress`: each
    repetition's per-second TPS by count, where kept; `others`: the noise of the run's other
    variants (noise.parts), pooled with this one's."""
    counts = tuple(sorted(n for n, x in by_n.items() if any(v and v > 0 for v in x)))
    values = {n: [float(v) for v in by_n[n] if v and v > 0] for n in counts}
    tps = tuple(float(statistics.median(values[n])) for n in counts)
    reps = tuple(len(values[n]) for n in counts)
    dips = _dips(counts, values, progress, allowance_pct, others)
    out = {d.count for d in dips if d.outlier}
    noise = measure(values, progress, allowance_pct, leave_out=out, others=others)
    kept = [i for i, c in enumerate(counts) if c not in out]
    y = np.log(np.asarray(tps))[kept]
    var = np.array([median_var(reps[i]) for i in kept])
    at = [counts[i] for i in kept]
    best, top = int(np.argmax(y)), len(kept) - 1
    drop = float(y[best] - y[top])
    declines = best != top and drop > noise.quantile(DECLINE_P) * noise.sd * math.sqrt(var[best] + var[top])
    level, plateau = _plateau(np.asarray(at), y[None, :], var, np.array([noise.sd]), np.array([best]), noise)
    return Reading(counts, tps, reps, noise, dips, _growth(at, y, var, noise), at[best], bool(declines),
                   1.0 - math.exp(-drop), tuple(c for c, p in zip(at, plateau[0], strict=True) if p),
                   float(np.exp(level[0])))


def _plateau(counts: np.ndarray, ys: np.ndarray, var: np.ndarray, sd: np.ndarray, best: np.ndarray, noise: Noise
             ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's plateau and its level (ln TPS): the widest run of neighbouring counts around the
    best that one level explains within the noise: their scatter about their mean (weighted by
    repetitions) within the 1% point of its chi-square distribution, no trend (the slope of ln TPS
    on log2 of the count, two-sided at 5%) and no cap (a peak's curvature, the square term of a
    quadratic in log2 of the count, one-sided at 2.5%), no count in it fallen below the best beyond
    the noise; the closest fit among equally wide runs. The level is the higher end of the line
    fitted to them (weighted by repetitions): their mean on a flat plateau, its top on a slow rise
    within the noise (the mean of a rise would put the answer too low); around a peak, the mean of
    the counts too close to tell from it."""
    rows, k = np.arange(len(ys)), ys.shape[1]
    w, x = 1.0 / var, np.log2(counts.astype(float))
    gap = ys[rows, best][:, None] - ys
    declined = gap > noise.quantile(DECLINE_P) * sd[:, None] * np.sqrt(var[best][:, None] + var[None, :])
    width, fit = np.zeros(len(ys), dtype=int), np.full(len(ys), np.inf)
    lo, hi = best.copy(), best.copy()
    level = ys[rows, best].copy()
    for a in range(k):
        for b in range(a, k):
            mean, chi, flat = _one_level(x[a:b + 1], ys[:, a:b + 1], w[a:b + 1], sd, noise)
            fits = (a <= best) & (best <= b) & flat & ~declined[:, a:b + 1].any(axis=1)
            better = fits & ((b - a + 1 > width) | ((b - a + 1 == width) & (chi < fit)))
            width, fit = np.where(better, b - a + 1, width), np.where(better, chi, fit)
            lo, hi, level = np.where(better, a, lo), np.where(better, b, hi), np.where(better, mean, level)
    j = np.arange(k)[None, :]
    return level, (j >= lo[:, None]) & (j <= hi[:, None])


def _one_level(x: np.ndarray, ys: np.ndarray, w: np.ndarray, sd: np.ndarray, noise: Noise
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a run of counts (log2 `x`, weights `w`) and each row of `ys`: its level (the higher end
    of its weighted line), the scatter about the mean (over sd^2), and whether one level explains
    the run (module docstring)."""
    m = len(x)
    sw = w.sum()
    mean = ys @ w / sw
    chi = ((ys - mean[:, None]) ** 2) @ w / (sd * sd)
    ok = chi <= noise.homogeneous(m)
    level = mean
    if m >= 3:
        xc = x - (w @ x) / sw
        sxx = float(w @ (xc * xc))
        slope = (ys * (w * xc)) @ np.ones(m) / sxx
        ok &= np.abs(slope) <= noise.quantile(0.975) * sd / math.sqrt(sxx)
        # the line's higher end (a slow rise's top), never above the highest of the run
        level = np.minimum(mean + np.maximum(slope * xc[-1], slope * xc[0]), ys.max(axis=1))
    if m >= 4:  # a quadratic leaves m - 3 degrees of freedom: its square term says whether the run is a cap
        design = np.column_stack([np.ones(m), xc, xc * xc])
        inverse = np.linalg.pinv(design.T @ (design * w[:, None]))
        square = (ys * w) @ design @ inverse[:, 2]
        ok &= square >= -noise.quantile(0.975) * sd * math.sqrt(max(float(inverse[2, 2]), 0.0))
    return level, chi, ok


def _dips(counts: Sequence[int], values: Mapping[int, Sequence[float]],
          progress: Mapping[int, Sequence[Sequence[float]]] | None, allowance_pct: float,
          others: Sequence[Noise]) -> tuple[Dip, ...]:
    """Each count inside the sweep below both neighbours' medians beyond the noise measured without
    it: out of line, unless every repetition of it is below them (then it reproduced)."""
    med = [float(statistics.median(values[n])) for n in counts]
    out: list[Dip] = []
    for i in range(1, len(counts) - 1):
        low = min(med[i - 1], med[i + 1])
        if med[i] >= low or len(counts) < 4:
            continue
        noise = measure(values, progress, allowance_pct, leave_out={counts[i]}, others=others, min_dof=1)
        nb = i - 1 if med[i - 1] <= med[i + 1] else i + 1
        se = noise.sd * math.sqrt(median_var(len(values[counts[i]])) + median_var(len(values[counts[nb]])))
        t = math.log(low / med[i]) / se
        if t <= NORMAL_DIP or med[i] > (1.0 - MIN_DIP) * low:
            continue
        reproduced = len(values[counts[i]]) >= 2 and max(values[counts[i]]) < low
        out.append(Dip(counts[i], med[i], (counts[i - 1], counts[i + 1]), 1.0 - med[i] / low, t, not reproduced))
    return tuple(out)


def _growth(counts: Sequence[int], y: np.ndarray, var: np.ndarray, noise: Noise, fraction: float = 0.95
            ) -> Growth | None:
    """The growth test (_grows) on the counts read, with its figures."""
    g = _grows(np.asarray(counts), y[None, :], var, np.array([noise.sd]), noise, fraction)
    if g is None:
        return None
    per, se, grows, unsettled, ref = (float(x[0]) for x in g)
    return Growth(counts[int(ref)], counts[-1], math.expm1(per), se, bool(grows), bool(unsettled))


def _grows(counts: np.ndarray, ys: np.ndarray, var: np.ndarray, sd: np.ndarray, noise: Noise, fraction: float
           ) -> tuple[np.ndarray, ...] | None:
    """Each row's growth per doubling at the top (ln TPS), its standard error, whether it grows,
    whether it is unsettled, and the count it is measured from. The last doubling, from the best
    count at or below half the largest; over the last two when the curve grew steadily (the
    earlier doubling not faster beyond the noise, one-sided at 10%), which halves the noise."""
    top = len(counts) - 1
    half = np.flatnonzero(counts[:-1] <= counts[-1] / 2)
    lower = half if half.size else np.arange(top)
    if not lower.size:
        return None
    rows = np.arange(len(ys))
    ref = lower[np.argmax(ys[:, lower], axis=1)]
    d1 = np.log2(counts[top] / counts[ref])
    g = (ys[:, top] - ys[rows, ref]) / d1
    se = sd * np.sqrt(var[top] + var[ref]) / d1
    if half.size:
        h = int(half[-1])
        quarter = np.flatnonzero(counts[:h] <= counts[h] / 2)
        if quarter.size:
            q = int(quarter[-1])
            d2, d = math.log2(counts[h] / counts[q]), math.log2(counts[top] / counts[q])
            earlier = (ys[:, h] - ys[:, q]) / d2
            slow = (earlier - g) / (sd * np.sqrt((var[h] + var[q]) / d2 ** 2 + (var[top] + var[h]) / d1 ** 2))
            steady = (ref == h) & (slow <= noise.quantile(0.90))
            g = np.where(steady, (ys[:, top] - ys[:, q]) / d, g)
            se = np.where(steady, sd * np.sqrt(var[top] + var[q]) / d, se)
            ref = np.where(steady, q, ref)
    beyond = g > -math.log(fraction)
    significant = g > noise.quantile(GROWS_P) * se
    return g, se, beyond & significant, beyond & ~significant, ref


def interval(r: Reading, fraction: float, allowed: Iterable[int] | None = None, for_now: bool = False,
             draws: int = DRAWS, seed: int = 7) -> tuple[tuple[int, int] | None, float]:
    """The counts the rule picks in the middle LEVEL of `draws` copies of the curve moved by its
    measured noise (those that pick one), and the share of copies that pick none (the curve still
    grows in them; never with `for_now`)."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(r.kept)
    pos = [r.counts.index(c) for c in r.kept]
    y = np.log(np.asarray(r.tps))[pos]
    var = np.array([median_var(r.reps[i]) for i in pos])
    sd = r.noise.draws(draws, rng)
    ys = y + sd[:, None] * np.sqrt(var) * rng.standard_normal((draws, len(pos)))
    ok = np.ones(len(pos), dtype=bool) if allowed is None else np.isin(counts, list(allowed))
    picked = _rule(counts, ys, var, sd, r.noise, fraction, ok, for_now)
    chosen = picked[picked > 0]
    return middle(chosen.tolist()), 1.0 - chosen.size / draws


def widened(span: tuple[int, int] | None, chosen: int) -> tuple[int, int]:
    """An interval taken out to take in the chosen count; the chosen count alone without one."""
    return (min(span[0], chosen), max(span[1], chosen)) if span else (chosen, chosen)


def middle(chosen: Sequence[int]) -> tuple[int, int] | None:
    """The counts at the edges of the middle LEVEL of those picked (measured counts, never between)."""
    if not chosen:
        return None
    ordered = sorted(chosen)
    tail = (1.0 - LEVEL) / 2.0
    last = len(ordered) - 1
    return ordered[int(math.floor(tail * last))], ordered[int(math.ceil((1.0 - tail) * last))]


def copies(by_n: Mapping[int, Sequence[float]], noise: Noise, draws: int = DRAWS, seed: int = 7
           ) -> list[dict[int, list[float]]]:
    """`draws` copies of the repetitions' TPS, each moved by noise drawn as measured (for a rule
    of its own, as analyze/poolprocs.py has: `middle` of what it picks on them is its interval)."""
    rng = np.random.default_rng(seed)
    sd = noise.draws(draws, rng)
    out: list[dict[int, list[float]]] = [{} for _ in range(draws)]
    for n, values in sorted(by_n.items()):
        v = np.asarray(values, dtype=float)
        moved = v[None, :] * np.exp(sd[:, None] * rng.standard_normal((draws, len(v))))
        for i in range(draws):
            out[i][n] = moved[i].tolist()
    return out


def _rule(counts: np.ndarray, ys: np.ndarray, var: np.ndarray, sd: np.ndarray, noise: Noise, fraction: float,
          ok: np.ndarray, for_now: bool = False) -> np.ndarray:
    """The reading's rule on each row of `ys` (ln TPS at `counts`), all rows at once: the count
    picked, or 0 where no count is allowed or the row still grows (`for_now`: read against the
    best so far, growing or not)."""
    rows = np.arange(len(ys))
    best = np.argmax(ys, axis=1)
    g = None if for_now else _grows(counts, ys, var, sd, noise, fraction)
    grows = g[2] if g is not None else np.zeros(len(ys), dtype=bool)
    level = ys[rows, best] if for_now else _plateau(counts, ys, var, sd, best, noise)[0]
    reach = (ys >= (level + math.log(fraction))[:, None]) & ok[None, :]
    first = np.argmax(reach, axis=1)
    picked = np.where(reach[rows, first], counts[first], 0)
    return np.where(grows, 0, picked)


def between(measured: Sequence[int], lo: int, hi: int) -> tuple[int, ...]:
    """The counts that split each bracket of measured counts from lo to hi: the geometric mean of
    each pair of neighbours, rounded down (22 between 16 and 32), where there is room."""
    span = [c for c in sorted(measured) if lo <= c <= hi]
    out = [m for a, b in zip(span, span[1:], strict=False) if (m := int(math.sqrt(a * b))) > a and m < b]
    return tuple(m for m in out if m not in measured)
