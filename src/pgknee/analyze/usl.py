"""The Universal Scalability Law fitted to a throughput curve. Pure.

X(N) = λN / (1 + σ(N−1) + κN(N−1)): λ the throughput of one session alone, σ contention
(the serial fraction), κ coherency (the cost of sessions keeping each other up to date).
Fitted on the raw throughput with bounded non-linear least squares (λ > 0, 0 ≤ σ < 1,
κ ≥ 0) from several starting points, never on a linearised transform. Intervals come from
BOOTSTRAP draws of a wild bootstrap (each residual of the fit, scaled for its leverage, kept
or flipped in sign at random: the noise of a throughput curve grows with N, which resampling
residuals across counts would smear; wild_draws), and, when each client count has several repetitions,
as many draws resampling them; the wider interval is kept. The draws are refitted all at once
(batch_fit: a projected Levenberg-Marquardt over every draw together, from the point
estimate, with the model's analytic Jacobian). The peak N* = sqrt((1−σ)/κ) is only reported
when the data identify it: κ clearly above 0 and N* not far beyond the largest N measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.base import lazy

BOOTSTRAP = 1000  # draws per bootstrap (wild residuals; repetitions too when there are several)
FAR_BEYOND = 2.0  # N* more than this times the largest N measured is an extrapolation
LOWER = np.array([1e-12, 0.0, 0.0])  # λ, σ, κ
UPPER = np.array([np.inf, 0.999999, np.inf])
BATCH_ITERATIONS = 200  # Levenberg-Marquardt iterations at most (from the point estimate: a few dozen)


Num = np.ndarray | float  # the model broadcasts: arrays of N, of parameters, or both


def usl(n: Num, lam: Num, sigma: Num, kappa: Num) -> Num:
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


def jacobian(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """d usl / d(λ, σ, κ) at each N: shape (..., len(n), 3) for parameters p of shape (..., 3)."""
    lam, sigma, kappa = (p[..., i, None] for i in range(3))
    nn1 = n * (n - 1.0)
    d = 1.0 + sigma * (n - 1.0) + kappa * nn1
    out = np.empty((*d.shape, 3))
    out[..., 0] = n / d
    out[..., 2] = -lam * out[..., 0] / d
    out[..., 1] = out[..., 2] * (n - 1.0)
    out[..., 2] *= nn1
    return out


STARTS = tuple((s0, k0) for s0 in (0.0, 0.05, 0.3, 0.8) for k0 in (0.0, 1e-4, 1e-3, 1e-2))  # σ, κ


def fit_params(n: Sequence[float], x: Sequence[float], start: Params | None = None) -> tuple[Params, float]:
    """Least squares from several starting points (or from `start` and one other: a refit
    near a fit), all at once (batch_fit), then scipy's trust-region reflective from the best
    of them; the best fit and its R²."""
    nn, xx = np.asarray(n, dtype=float), np.asarray(x, dtype=float)
    lam0 = float(max(xx[nn == nn.min()].mean() / nn.min(), 1e-9))
    starts = np.array([[start.lam, start.sigma, start.kappa], [start.lam, 0.05, 1e-3]] if start is not None
                      else [[lam0, s0, k0] for s0, k0 in STARTS])
    fits = _batch(nn, np.tile(xx, (len(starts), 1)), starts)
    costs = np.sum((usl(nn, fits[:, :1], fits[:, 1:2], fits[:, 2:]) - xx) ** 2, axis=1)
    best = fits[int(np.argmin(costs))]
    try:
        r = lazy.optimize().least_squares(lambda p: usl(nn, p[0], p[1], p[2]) - xx, x0=best,
                                   jac=lambda p: jacobian(nn, p), bounds=(LOWER, UPPER), method="trf",
                                   x_scale=[lam0, 0.1, 1e-3], max_nfev=2000)
        if 2.0 * r.cost < costs.min():
            best = r.x
    except ValueError:
        pass
    p = Params(*map(float, best))
    ss_res = float(np.sum((usl(nn, p.lam, p.sigma, p.kappa) - xx) ** 2))
    ss_tot = float(np.sum((xx - xx.mean()) ** 2))
    return p, (1.0 - ss_res / ss_tot) if ss_tot > 0 else 1.0


def batch_fit(n: Sequence[float], ys: np.ndarray, start: Params) -> np.ndarray:
    """The least-squares fit of each row of `ys` (throughputs at the concurrencies `n`), all
    rows at once, from `start`: rows of (λ, σ, κ)."""
    y = np.atleast_2d(np.asarray(ys, dtype=float))
    return _batch(np.asarray(n, dtype=float), y, np.tile([start.lam, start.sigma, start.kappa], (len(y), 1)))


def _batch(n: np.ndarray, y: np.ndarray, p0: np.ndarray) -> np.ndarray:
    """Levenberg-Marquardt for each row of y from the same row of p0, with Marquardt's scaling,
    projected on the bounds (a parameter at a bound that the gradient pushes outward stays
    there, the others move); a row stops when a step lowers its cost by less than a part in
    10^10, or no step lowers it."""
    p: np.ndarray = np.clip(p0.astype(float), LOWER, UPPER)
    r = np.asarray(usl(n, p[:, :1], p[:, 1:2], p[:, 2:])) - y
    cost = np.sum(r * r, axis=1)
    mu = np.full(len(y), 1e-3)
    going = np.arange(len(y))
    for _ in range(BATCH_ITERATIONS):
        if going.size == 0:
            break
        new = _lm_step(n, p[going], r[going], mu[going])
        new_r = usl(n, new[:, :1], new[:, 1:2], new[:, 2:]) - y[going]
        new_cost, old = np.sum(new_r * new_r, axis=1), cost[going]
        better = new_cost < old
        moved = np.abs(new - p[going]).max(axis=1, initial=0.0) > 0
        keep = going[better]
        p[keep], r[keep], cost[keep] = new[better], new_r[better], new_cost[better]
        mu[going] = np.where(better, np.maximum(mu[going] / 3.0, 1e-12), mu[going] * 4.0)
        done = (better & (old - new_cost <= 1e-10 * old)) | ~moved | (mu[going] > 1e12)
        going = going[~done]
    return p


def _lm_step(n: np.ndarray, p: np.ndarray, r: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """One damped Gauss-Newton step for each row of p (residuals r), clipped to the bounds."""
    jac = jacobian(n, p)
    g = np.matmul(r[:, None, :], jac)[:, 0, :]
    fixed = ((p <= LOWER) & (g > 0)) | ((p >= UPPER) & (g < 0))
    jac = np.where(fixed[:, None, :], 0.0, jac)
    g = np.where(fixed, 0.0, g)
    a = np.matmul(jac.transpose(0, 2, 1), jac)
    d = np.diagonal(a, axis1=1, axis2=2)
    scale = np.where(fixed, 1.0, np.maximum(d, 1e-12 * d.max(axis=1, keepdims=True) + 1e-300))
    a = a + np.eye(3) * (np.where(fixed, 1.0, mu[:, None] * scale))[:, None, :]
    step = np.linalg.solve(a, -g[..., None])[..., 0]
    return np.clip(p + step, LOWER, UPPER)


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
    method: str  # how the intervals were made: 'wild residuals', or 'repetitions and wild residuals'
    samples: tuple[Params, ...]  # the bootstrap fits (draws of each bootstrap)
    draws: int = 0  # draws per bootstrap

    @property
    def identified(self) -> bool:
        """The data pin down a peak: κ's interval excludes 0 and N* (upper bound) is not a
        far extrapolation."""
        return self.kappa.lo > 1e-9 and self.peak_n.hi <= FAR_BEYOND * self.max_n


def _interval(values: Sequence[float] | np.ndarray) -> Interval:
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
    by_resid = batch_fit(n, wild_draws(n, x, params, BOOTSTRAP, rng), params)
    by_reps = batch_fit(n, repetition_draws(groups, BOOTSTRAP, rng), params) if reps else None

    def interval(get: str) -> Interval:
        """With repetitions, the wider of the two bootstraps: resampling two or three
        repetitions alone understates the spread (measured: it missed the true peak)."""
        a = _interval(_column(by_resid, get))
        if by_reps is None:
            return a
        b = _interval(_column(by_reps, get))
        return Interval(min(a.lo, b.lo), max(a.hi, b.hi))

    draws = by_resid if by_reps is None else np.vstack([by_resid, by_reps])
    return Fit(params=params, r2=r2, points=len(x), max_n=max(n), sigma=interval("sigma"),
               kappa=interval("kappa"), peak_n=interval("peak_n"), peak_x=interval("peak_x"),
               method="repetitions and wild residuals" if reps else "wild residuals",
               samples=tuple(Params(*map(float, row)) for row in draws), draws=BOOTSTRAP)


def wild_draws(n: Sequence[float], x: Sequence[float], p: Params, draws: int, rng: np.random.Generator
               ) -> np.ndarray:
    """`draws` rows of throughputs: the fitted curve plus each residual, divided by 1 minus
    its leverage (HC3: a least-squares fit pulls each residual towards 0, a point that bends
    the fit most of all), times a Rademacher sign (±1, each with probability 1/2). Each
    measurement keeps its own noise level, which grows with N on a real curve. Measured over
    200 noisy curves of 9 counts: the 95% intervals of σ, κ and N* held the truth 94-95% of the
    time (scaled by 1/sqrt(1 - leverage), HC2, 83-90%; the bootstrap before, residuals
    resampled across counts, 80-83%)."""
    nn, xx = np.asarray(n, dtype=float), np.asarray(x, dtype=float)
    fitted = np.asarray(usl(nn, p.lam, p.sigma, p.kappa))
    theta = np.array([p.lam, p.sigma, p.kappa])
    free = (theta > LOWER) & (theta < UPPER)  # a parameter at its bound does not bend the fit
    q, _ = np.linalg.qr(jacobian(nn, theta)[:, free])
    leverage = np.minimum(np.sum(q * q, axis=1), 0.9)
    resid = (xx - fitted) / (1.0 - leverage)
    signs: np.ndarray = rng.choice(np.array([-1.0, 1.0]), size=(draws, len(xx)))
    out: np.ndarray = fitted + resid * signs
    return out


def repetition_draws(groups: Sequence[tuple[float, Sequence[float]]], draws: int, rng: np.random.Generator
                     ) -> np.ndarray:
    """`draws` rows of throughputs, in the order of the groups' values: at each N, its
    repetitions drawn with replacement."""
    cols = []
    for _, values in groups:
        v = np.asarray(values, dtype=float)
        cols.append(v[rng.integers(0, len(v), size=(draws, len(v)))])
    return np.hstack(cols)


def _column(fits: np.ndarray, get: str) -> np.ndarray:
    """σ, κ, N* or the peak throughput of each row (λ, σ, κ) of `fits`, as Params has them."""
    lam, sigma, kappa = fits[:, 0], fits[:, 1], fits[:, 2]
    if get in ("sigma", "kappa"):
        return sigma if get == "sigma" else kappa
    with np.errstate(divide="ignore", invalid="ignore"):
        peak_n = np.where(kappa > 1e-12, np.sqrt((1.0 - sigma) / np.where(kappa > 1e-12, kappa, 1.0)), np.inf)
        if get == "peak_n":
            return peak_n
        asymptote = np.where(sigma > 0, lam / np.where(sigma > 0, sigma, 1.0), np.inf)
        finite_n = np.where(np.isfinite(peak_n), peak_n, 1.0)
        return np.where(np.isfinite(peak_n), usl(finite_n, lam, sigma, kappa), asymptote)


def smallest_n_reaching(p: Params, fraction: float, ceiling: float) -> float | None:
    """The smallest N (on a fine grid up to `ceiling`) whose modelled throughput reaches
    `fraction` of the peak."""
    target = fraction * (p.peak_x if math.isfinite(p.peak_x) else p.x(ceiling))
    grid = np.linspace(1.0, ceiling, 2000)
    hits = grid[usl(grid, p.lam, p.sigma, p.kappa) >= target]
    return float(hits[0]) if hits.size else None


def smallest_n_reaching_each(fits: Sequence[Params], fraction: float, ceiling: float) -> np.ndarray:
    """smallest_n_reaching of each fit, on the same grid, all at once (NaN where none reaches):
    the model crosses the target t where tκN² + (tσ − tκ − λ)N + t(1 − σ) = 0, at its smaller
    root; the grid point is the first at or after it, checked against the model itself."""
    arr = np.array([[f.lam, f.sigma, f.kappa] for f in fits], dtype=float).reshape(-1, 3)
    lam, sigma, kappa = arr[:, 0], arr[:, 1], arr[:, 2]
    peak = _column(arr, "peak_x")
    t = fraction * np.where(np.isfinite(peak), peak, np.asarray(usl(ceiling, lam, sigma, kappa)))
    a, b, c = t * kappa, t * sigma - t * kappa - lam, t * (1.0 - sigma)
    disc = b * b - 4.0 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.where(disc >= 0, 2.0 * c / (-b + np.sqrt(np.maximum(disc, 0.0))), np.inf)
    grid = np.linspace(1.0, ceiling, 2000)
    step = (ceiling - 1.0) / 1999.0
    k = np.clip(np.ceil(np.nan_to_num((root - 1.0) / step, nan=2000.0, posinf=2000.0)), 0, 1999).astype(int)

    def reaches(i: np.ndarray) -> np.ndarray:
        return np.asarray(usl(grid[i], lam, sigma, kappa)) >= t

    for _ in range(2):  # the root's rounding: a grid point either way
        k = np.where(~reaches(k) & (k < 1999), k + 1, k)
        k = np.where((k > 0) & reaches(np.maximum(k - 1, 0)), k - 1, k)
    out: np.ndarray = np.where(reaches(k), grid[k], np.nan)
    return out


def next_counts(measured: Sequence[int], cpus: int | None) -> list[int]:
    """Counts to add when the peak is not reached: doubling past the largest, at least to 8x
    the server's CPUs (when they are known), four of them."""
    top = max(measured)
    out: list[int] = []
    n = top
    while len(out) < 4:
        n *= 2
        out.append(n)
    if cpus is not None and out[-1] < 8 * cpus:
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
    fits = np.array([[s.lam, s.sigma, s.kappa] for s in f.samples])
    curves = np.asarray(usl(grid, fits[:, :1], fits[:, 1:2], fits[:, 2:]))
    return np.percentile(curves, 2.5, axis=0), np.percentile(curves, 97.5, axis=0)
