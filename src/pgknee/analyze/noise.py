"""How much one repetition's throughput moves by chance, measured from the run itself. Pure.

Three sources, each a DBA would read:

* **the repetitions**: a count measured several times shows its own spread (the variance of the
  logarithm of TPS about each count's mean); over three counts or more, their median variance,
  so that a repetition out of line at one count does not make the whole run noisy;
* **the scatter of the counts around a smooth curve**: one repetition per count still shows noise,
  as the jagged line a smooth throughput curve is not. The smooth curve is the closest of the
  Universal Scalability Law, a parabola and a broken line on the log-log scale (_scatter), fitted to
  the counts at half the best throughput or more; the scatter is the residuals' variance with k - p
  degrees of freedom (p parameters fitted to k counts), pooled over the run's variants. A curve none
  of them can follow reads as noisier than it is: the error is on the safe side (a wider interval);
* **each step's per-second throughput** (pgbench's progress): the standard error of the step's
  mean, corrected for the autocorrelation of a closed loop's per-second figures (the effective
  number of seconds, n(1 - r)/(1 + r), r the lag-one autocorrelation pooled over the steps). It
  misses what changes between steps (a checkpoint, the cache, a neighbour): on the 60 sweeps of
  three runs each in tvondra/postgres-archaeology the spread between runs was a median 2.9 times
  this figure. So it is a floor, never the estimate.

The estimate: the repetitions alone when they carry at least as many degrees of freedom as the
scatter; else both, pooled by their degrees of freedom (the scatter needs two, over the variants);
never below the per-second floor (nor below FLOOR). With neither (one repetition of too few counts)
the noise is assumed: the run's noise allowance (--noise-threshold) taken as two standard
deviations, or the per-second floor if higher, and said so. The degrees of freedom travel with
the estimate: a test or an interval built on it uses Student's t, and draws of the noise (draws)
vary it as its estimate would (a scaled inverse chi-square)."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.usl import LOWER, UPPER, fit_params, usl
from pgknee.analyze.words import plural
from pgknee.base import lazy

FLOOR = 0.001  # a step's TPS does not repeat to better than 0.1%: a noiseless curve reads no difference as real
HOMOGENEOUS_P = 0.99  # values of one level scatter less than this quantile (analyze/curve.py's plateau)
SKIP_S = 1  # the first second of a step's progress holds its clients' connections


@dataclass(frozen=True)
class Noise:
    """The relative standard deviation of one repetition's TPS (0.03 is 3%), the degrees of
    freedom behind it (inf: known exactly, as when assumed), where it came from, and its parts."""

    sd: float
    dof: float
    source: str  # 'repetitions', 'scatter', 'repetitions and scatter', 'assumed'
    repetitions: tuple[float, float] | None = None  # (sd, dof) from the repetitions
    scatter: tuple[float, float] | None = None  # (sd, dof) from the counts around the smooth curve
    scatter_all: tuple[float, float] | None = None  # the same with two degrees of freedom at least (parts)
    within: float | None = None  # the per-second floor: the standard error of one step's mean
    variants: int = 1  # the run's variants it was pooled over

    def quantile(self, p: float) -> float:
        """Student's t quantile with the estimate's degrees of freedom (the normal's when known)."""
        # the normal's for the scatter too: it errs high already (see the module)
        return _quantile(p, math.inf if self.source == "scatter" else self.dof)

    def homogeneous(self, m: int, p: float = HOMOGENEOUS_P) -> float:
        """The largest scatter (sum of squared deviations over sd^2) that m values of one level
        show with probability p: (m - 1) F(m - 1, dof), chi-square(m - 1) when the noise is known."""
        if m <= 1:
            return math.inf
        return _chi2_quantile(p, m - 1)

    def draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """`n` values the true noise could have, given the estimate: sd * sqrt(dof / chi2(dof))."""
        if math.isinf(self.dof):
            return np.full(n, self.sd)
        return np.asarray(self.sd * np.sqrt(self.dof / rng.chisquare(self.dof, size=n)))

    def text(self) -> str:
        """One line for the reasons: the figure, and how it was measured."""
        pct = f"{100 * self.sd:.1f}%"
        floor = f"; each step's per-second throughput puts a floor of {100 * self.within:.1f}%" if self.within else ""
        if self.source == "assumed":
            return (f"noise {pct} per repetition, assumed (the noise allowance as two standard deviations{floor}): "
                    "one repetition of too few counts for their scatter cannot measure it; repetitions (--reps 3) "
                    "would")
        parts = []
        if self.repetitions is not None and "repetitions" in self.source:
            parts.append(f"the repetitions ({_dof(self.repetitions[1])})")
        if self.scatter is not None and "scatter" in self.source:
            parts.append(f"the scatter of the counts around a smooth curve ({_dof(self.scatter[1])})")
        over = f", pooled over the run's {self.variants} variants" if self.variants > 1 else ""
        return f"noise {pct} per repetition, measured from {' and '.join(parts)}{over}{floor}"


def _dof(d: float) -> str:
    return f"{d:.0f} {plural(round(d), 'degree')} of freedom"


# scipy's quantile functions cost about 0.3 ms a call, and an answer asks for the same few
# hundreds of times (a fifth of its time): remembered per (p, degrees of freedom)
@functools.lru_cache(maxsize=4096)
def _quantile(p: float, dof: float) -> float:
    """Student's t quantile; the normal's for infinite degrees of freedom."""
    return float(lazy.stats().norm.ppf(p) if math.isinf(dof) else lazy.stats().t.ppf(p, dof))


@functools.lru_cache(maxsize=4096)
def _chi2_quantile(p: float, dof: int) -> float:
    return float(lazy.stats().chi2.ppf(p, dof))


def measure(by_n: Mapping[int, Sequence[float]], progress: Mapping[int, Sequence[Sequence[float]]] | None = None,
            allowance_pct: float = 10.0, leave_out: Iterable[int] = (), others: Sequence[Noise] = (),
            min_dof: int = 2) -> Noise:
    """The noise of one repetition's TPS. `by_n`: the repetitions' TPS by count; `progress`: each
    repetition's per-second TPS by count (empty where none was kept); `leave_out`: counts left out
    (steps out of line with their neighbours); `others`: the run's other variants' noise, pooled
    with this one's (the noise is the machine's and the server's more than a variant's);
    `min_dof`: the fewest degrees of freedom the scatter, pooled over the variants, may have (one,
    for the search for a step out of line, which asks a larger step of it too: analyze/curve.py)."""
    skip = set(leave_out)
    data = {n: [float(v) for v in x if v and v > 0] for n, x in by_n.items() if n not in skip}
    data = {n: x for n, x in data.items() if x}
    own = parts(data, {n: p for n, p in (progress or {}).items() if n not in skip})
    return combine([own, *others], allowance_pct, min_dof)


def parts(data: Mapping[int, Sequence[float]], progress: Mapping[int, Sequence[Sequence[float]]]) -> Noise:
    """One variant's three sources, not yet combined (combine does; a scatter of one degree of
    freedom counts only pooled with others)."""
    return Noise(0.0, 0.0, "parts", repetitions=_repetitions(data), scatter=_scatter(data),
                 scatter_all=_scatter(data, 2), within=_within(progress))


def combine(noises: Sequence[Noise], allowance_pct: float = 10.0, min_dof: int = 2) -> Noise:
    """The estimate from the sources of one or more variants: each source pooled over them by its
    degrees of freedom (the scatter only with `min_dof` or more in all: with one, an estimate could
    be a tenth of the truth or ten times it); the repetitions alone when they carry at least as many
    as the scatter, else both pooled; never below the per-second floor."""
    reps = _pool([n.repetitions for n in noises])
    scatter = _pool([n.scatter for n in noises])
    if scatter is None or scatter[1] < min_dof:  # one degree of freedom each and alone: those with two or more
        scatter = _pool([n.scatter_all for n in noises])
    floors = [n.within for n in noises if n.within is not None]
    within = math.sqrt(statistics.fmean(w * w for w in floors)) if floors else None
    if reps is not None and (scatter is None or reps[1] >= scatter[1]):
        sd, dof, source = reps[0], reps[1], "repetitions"
    elif reps is not None and scatter is not None:
        (sd, dof), source = _pool([reps, scatter]) or reps, "repetitions and scatter"
    elif scatter is not None:
        sd, dof, source = scatter[0], scatter[1], "scatter"
    else:  # nothing measures it: the allowance, never below what the seconds show
        return Noise(max(allowance_pct / 200.0, within or 0.0), math.inf, "assumed", within=within)
    return Noise(max(sd, within or 0.0, FLOOR), dof, source, repetitions=reps, scatter=scatter, within=within,
                 variants=len(noises))


def _pool(estimates: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    """Standard deviations pooled by their degrees of freedom."""
    known = [e for e in estimates if e is not None and e[1] > 0]
    if not known:
        return None
    dof = sum(d for _, d in known)
    return math.sqrt(sum(d * sd * sd for sd, d in known) / dof), dof


def _repetitions(data: Mapping[int, Sequence[float]]) -> tuple[float, float] | None:
    """The standard deviation of ln TPS about each count's mean, from the counts repeated, and its
    degrees of freedom. Pooled (their variances averaged by degrees of freedom) over one or two
    counts; over three or more, their median variance, scaled by the median of its chi-square (a
    repetition out of line at one or two counts, a checkpoint, does not make the whole run noisy),
    with the degrees of freedom the median keeps (two thirds, about, of the pooled ones)."""
    groups = [np.log(np.asarray(x)) for x in data.values() if len(x) >= 2]
    if not groups:
        return None
    dof = float(sum(len(g) - 1 for g in groups))
    if len(groups) < 3:
        return math.sqrt(sum(float(np.sum((g - g.mean()) ** 2)) for g in groups) / dof), dof
    variances = [float(np.var(g, ddof=1)) for g in groups]
    k = int(statistics.median(len(g) for g in groups))
    scale = float(lazy.stats().chi2.median(k - 1)) / (k - 1)
    return math.sqrt(statistics.median(variances) / scale), max(2.0 / 3.0 * dof, 1.0)


def _scatter(data: Mapping[int, Sequence[float]], min_dof: int = 1) -> tuple[float, float] | None:
    """The counts' medians around a smooth curve: the standard deviation of one repetition (a
    median of k repetitions counts k times) and its degrees of freedom. The smooth curve is the
    closest (per degree of freedom) of three, all fitted to ln TPS: the scalability model (three
    parameters, k - 3 degrees of freedom), which follows a gradual bend; a parabola on the log-log
    scale (three, k - 3), which also follows a first step that more than doubles; and a broken line
    on the log-log scale (a rise, then a plateau or a fall from one measured count on: four, k - 4),
    which follows the sharp knee of a saturated CPU. Only the counts at half the best throughput or
    more are read when they leave `min_dof` degrees of freedom (where every answer is; the first
    steps of the rise, a cold first step among them, are where the curves miss most). Each smooth
    is tried with `min_dof` degrees of freedom or more; None when none can be."""
    counts = sorted(data)
    med = {n: float(statistics.median(data[n])) for n in counts}
    high = [n for n in counts if med[n] >= 0.5 * max(med.values())]
    counts = high if len(high) >= 3 + min_dof else counts
    if len(counts) < 3 + min_dof:
        return None
    y = np.log(np.array([med[n] for n in counts]))
    weight = np.array([len(data[n]) for n in counts], dtype=float)
    x = np.log2(np.asarray(counts, dtype=float))
    fits = [(_usl_log(np.asarray(counts, dtype=float), y, weight), len(counts) - 3),
            (_polynomial(x, y, weight, 2), len(counts) - 3)]
    if len(counts) - 4 >= min_dof:
        fits.append((_broken_line(x, y, weight), len(counts) - 4))
    ss, dof = min(fits, key=lambda f: f[0] / f[1])
    return math.sqrt(ss / dof), float(dof)


def _usl_log(n: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """The weighted residual sum of squares of the scalability model fitted to ln TPS (relative
    errors, as noise is: the raw fit of analyze/usl.py lets the small counts' errors grow)."""
    p, _ = fit_params(n.tolist(), np.exp(y).tolist())
    sw = np.sqrt(w)

    def resid(q: np.ndarray) -> np.ndarray:
        return np.asarray(sw * (y - np.log(np.maximum(usl(n, q[0], q[1], q[2]), 1e-12))))

    try:
        r = lazy.optimize().least_squares(resid, x0=[p.lam, p.sigma, p.kappa], bounds=(LOWER, UPPER), method="trf",
                                   x_scale=[max(p.lam, 1e-9), 0.1, 1e-3], max_nfev=500)
        return float(min(np.sum(r.fun ** 2), np.sum(resid(np.array([p.lam, p.sigma, p.kappa])) ** 2)))
    except ValueError:
        return float(np.sum(resid(np.array([p.lam, p.sigma, p.kappa])) ** 2))


def _polynomial(x: np.ndarray, y: np.ndarray, w: np.ndarray, degree: int) -> float:
    """The weighted residual sum of squares of a polynomial in log2 of the count (a parabola on the
    log-log scale bends as a rise into a plateau does, and follows a first step that more than
    doubles, which the scalability model cannot: a cold first step, say)."""
    coef = np.polynomial.polynomial.polyfit(x, y, degree, w=np.sqrt(w))
    return float(np.sum(w * (y - np.polynomial.polynomial.polyval(x, coef)) ** 2))


def _broken_line(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """The weighted residual sum of squares of the best continuous line broken at one inner point."""
    best = math.inf
    for j in range(1, len(x) - 1):
        design = np.column_stack([np.ones_like(x), np.minimum(x - x[j], 0.0), np.maximum(x - x[j], 0.0)])
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)
        best = min(best, float(np.sum(w * (y - design @ coef) ** 2)))
    return best


def _within(progress: Mapping[int, Sequence[Sequence[float]]]) -> float | None:
    """The relative standard error of one step's mean TPS from its per-second figures, the
    autocorrelation pooled over the steps, the variances pooled (root mean square) too."""
    series = [np.asarray(s[SKIP_S:], dtype=float) for steps in progress.values() for s in steps]
    series = [s / s.mean() for s in series if s.size >= 4 and s.mean() > 0]
    if not series:
        return None
    r = _lag_one(series)
    var = [float(np.var(s, ddof=1)) / max(s.size * (1 - r) / (1 + r), 1.0) for s in series]
    return math.sqrt(statistics.fmean(var))


def _lag_one(series: Sequence[np.ndarray]) -> float:
    """The lag-one autocorrelation of the series, pooled (each about its own mean), in 0..0.9."""
    num = den = 0.0
    for s in series:
        d = s - s.mean()
        num += float(np.sum(d[1:] * d[:-1]))
        den += float(np.sum(d * d))
    return min(max(num / den, 0.0), 0.9) if den > 0 else 0.0
