"""The Universal Scalability Law fitted to a throughput curve. Pure.

X(N) = λN / (1 + σ(N−1) + κN(N−1)): λ the throughput of one session alone, σ contention
(the serial fraction), κ coherency (the cost of sessions keeping each other up to date).
Fitted on the raw throughput with bounded non-linear least squares (λ > 0, 0 ≤ σ < 1,
κ ≥ 0) from several starting points, never on a linearised transform. Intervals come from
bootstrapping: over the repetitions of each client count when there are several, over the
residuals of the fit when there is one. The peak N* = sqrt((1−σ)/κ) is only reported when
the data identify it: κ clearly above 0 and N* not far beyond the largest N measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

BOOTSTRAP = 200  # fits per bootstrap; each fit of a dozen points takes a few ms
FAR_BEYOND = 2.0  # N* more than this times the largest N measured is an extrapolation


def usl(n: np.ndarray | float, lam: float, sigma: float, kappa: float) -> np.ndarray | float:
    return lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


@dataclass(frozen=True)
class Params:
    lam: float
    sigma: float
    kappa: float

    @property
    def peak_n(self) -> float:
        return math.sqrt((1.0 - self.sigma) / self.kappa) if self.kappa > 1e-12 else math.inf

    @property
    def peak_x(self) -> float:
        n = self.peak_n
        if math.isinf(n):
            return self.lam / self.sigma if self.sigma > 0 else math.inf  # the asymptote
        return float(usl(n, self.lam, self.sigma, self.kappa))

    def x(self, n: float) -> float:
        return float(usl(n, self.lam, self.sigma, self.kappa))


def fit_params(n: Sequence[float], x: Sequence[float], start: Params | None = None) -> tuple[Params, float]:
    """Least squares from several starting points (or from `start` alone: the bootstrap
    refits near the fit it resamples); the best fit and its R²."""
    nn, xx = np.asarray(n, dtype=float), np.asarray(x, dtype=float)
    lam0 = float(max(xx[nn == nn.min()].mean() / nn.min(), 1e-9))
    starts = ([(start.sigma, start.kappa), (0.05, 1e-3)] if start is not None else
              [(s0, k0) for s0 in (0.0, 0.05, 0.3, 0.8) for k0 in (0.0, 1e-4, 1e-3, 1e-2)])
    best: tuple[float, np.ndarray] | None = None
    for s0, k0 in starts:
        try:
            r = optimize.least_squares(
                lambda p: usl(nn, p[0], p[1], p[2]) - xx, x0=[start.lam if start else lam0, s0, k0],
                bounds=([1e-12, 0.0, 0.0], [np.inf, 0.999999, np.inf]), method="trf",
                x_scale=[lam0, 0.1, 1e-3], max_nfev=2000)
        except ValueError:
            continue
        if best is None or r.cost < best[0]:
            best = (float(r.cost), r.x)
    assert best is not None
    p = Params(*map(float, best[1]))
    ss_res = float(np.sum((usl(nn, p.lam, p.sigma, p.kappa) - xx) ** 2))
    ss_tot = float(np.sum((xx - xx.mean()) ** 2))
    return p, (1.0 - ss_res / ss_tot) if ss_tot > 0 else 1.0


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float


@dataclass(frozen=True)
class Fit:
    params: Params
    r2: float
    points: int  # measurements fitted (client counts x repetitions)
    max_n: float  # the largest concurrency measured
    sigma: Interval
    kappa: Interval
    peak_n: Interval
    peak_x: Interval
    method: str  # how the intervals were made: 'repetitions' or 'residuals'
    samples: tuple[Params, ...]  # the bootstrap fits

    @property
    def identified(self) -> bool:
        """The data pin down a peak: κ's interval excludes 0 and N* (upper bound) is not a
        far extrapolation."""
        return self.kappa.lo > 1e-9 and self.peak_n.hi <= FAR_BEYOND * self.max_n


def _interval(values: Sequence[float]) -> Interval:
    arr = np.asarray(values, dtype=float)
    finite = arr[np.isfinite(arr)]
    if finite.size < len(arr) * 0.975 or finite.size == 0:  # more than 2.5% infinite: the top is open
        return Interval(float(np.percentile(finite, 2.5)) if finite.size else math.inf, math.inf)
    return Interval(float(np.percentile(arr, 2.5)), float(np.percentile(arr, 97.5)))


def fit(groups: Sequence[tuple[float, Sequence[float]]], *, seed: int = 1) -> Fit:
    """groups: (concurrency N, the throughput of each repetition at N)."""
    n = [g[0] for g in groups for _ in g[1]]
    x = [v for g in groups for v in g[1]]
    if len({g[0] for g in groups}) < 3:
        raise ValueError("a scalability fit needs at least three client counts")
    params, r2 = fit_params(n, x)
    rng = np.random.default_rng(seed)
    reps = all(len(g[1]) >= 2 for g in groups)
    fitted = np.asarray([params.x(v) for v in n])
    resid = np.asarray(x) - fitted
    by_resid: list[Params] = []
    by_reps: list[Params] = []
    for _ in range(BOOTSTRAP):
        bx = (fitted + rng.choice(resid, size=len(resid), replace=True)).tolist()
        by_resid.append(fit_params(n, bx, start=params)[0])
        if reps:
            bn, bx = [], []
            for conc, values in groups:
                pick = rng.choice(np.asarray(values, dtype=float), size=len(values), replace=True)
                bn.extend([conc] * len(values))
                bx.extend(pick.tolist())
            by_reps.append(fit_params(bn, bx, start=params)[0])

    def interval(get: str) -> Interval:
        """With repetitions, the wider of the two bootstraps: resampling two or three
        repetitions alone understates the spread (measured: it missed the true peak)."""
        a = _interval([getattr(s, get) for s in by_resid])
        if not by_reps:
            return a
        b = _interval([getattr(s, get) for s in by_reps])
        return Interval(min(a.lo, b.lo), max(a.hi, b.hi))

    return Fit(params=params, r2=r2, points=len(x), max_n=max(n), sigma=interval("sigma"),
               kappa=interval("kappa"), peak_n=interval("peak_n"), peak_x=interval("peak_x"),
               method="repetitions and residuals" if reps else "residuals", samples=tuple(by_resid + by_reps))


def smallest_n_reaching(p: Params, fraction: float, ceiling: float) -> float | None:
    """The smallest N (on a fine grid up to `ceiling`) whose modelled throughput reaches
    `fraction` of the peak."""
    target = fraction * (p.peak_x if math.isfinite(p.peak_x) else p.x(ceiling))
    grid = np.linspace(1.0, ceiling, 2000)
    hits = grid[usl(grid, p.lam, p.sigma, p.kappa) >= target]
    return float(hits[0]) if hits.size else None


def next_counts(measured: Sequence[int], cpus: int) -> list[int]:
    """Counts to add when the peak is not reached: doubling past the largest, at least to 8x
    the CPUs, four of them."""
    top = max(measured)
    out: list[int] = []
    n = top
    while len(out) < 4:
        n *= 2
        out.append(n)
    if out[-1] < 8 * cpus:
        out.append(8 * cpus)
    return out


def fitted_curve(p: Params, grid: np.ndarray) -> np.ndarray:
    """The modelled throughput at each concurrency of `grid`."""
    return np.asarray(usl(grid, p.lam, p.sigma, p.kappa))


def band(f: Fit, grid: np.ndarray, min_fits: int = 20) -> tuple[np.ndarray, np.ndarray] | None:
    """The 95% band of the bootstrap fits' curves over `grid` (2.5th and 97.5th percentiles at
    each point); None with fewer than `min_fits` fits."""
    if len(f.samples) < min_fits:
        return None
    curves = np.array([usl(grid, s.lam, s.sigma, s.kappa) for s in f.samples])
    return np.percentile(curves, 2.5, axis=0), np.percentile(curves, 97.5, axis=0)
