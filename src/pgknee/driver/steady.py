"""When is a step's throughput steady, and known well enough to stop? Read from pgbench's per-second
progress while it runs.

Warm-up is cut with MSER-5 (White 1997; White, Cobb & Spratt 2000, "A comparison of five steady-
state truncation heuristics for simulation"): the per-second TPS are averaged in batches of five,
and the truncation point d is the number of leading batches whose removal minimises the squared
standard error of the remaining batch means, sum((z_j - mean)^2) / (b - d)^2. As the heuristic's
authors advise, d is searched in the first half of the batches only. What is left is steady unless
it still trends: the regression slope of its batch means significant at 5% (a check in the spirit of
Geweke's comparison of a series' early and late parts). The steady part's mean TPS gets a Student-t
interval over its batch means (batches of five seconds are what keeps the interval honest under the
autocorrelation of a closed-loop benchmark's per-second figures); the step stops once that interval
is within ±target of the mean, after a minimum of steady batches, or at its maximum duration."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.base import lazy

BATCH = 5  # seconds per batch: MSER-5
MIN_STEADY_BATCHES = 4  # the interval needs at least this many batch means after the warm-up


@dataclass(frozen=True)
class Steadiness:
    """What the progress so far says: the warm-up cut, the steady part's mean TPS and the
    half-width of its 95% interval relative to the mean (inf until there are enough batches)."""

    seconds: int  # progress points read
    warmup_s: int  # leading seconds cut as warm-up (MSER-5)
    steady: bool  # the truncation point lies in the first half and enough batches follow it
    mean_tps: float
    halfwidth: float  # relative: 0.02 is ±2%

    def within(self, target: float) -> bool:
        return self.steady and self.halfwidth <= target


def batch_means(tps: Sequence[float], batch: int = BATCH) -> np.ndarray:
    """Means of consecutive whole batches (a trailing partial batch is left out; none: an empty array)."""
    y = np.asarray(tps, dtype=float)
    b = y.size // batch
    means: np.ndarray = y[:b * batch].reshape(b, batch).mean(axis=1)
    return means


def mser_truncation(z: np.ndarray) -> int:
    """MSER over batch means z: the number of leading batches to drop (searched over the first
    half, as the heuristic's authors advise; the last batch is never the whole series)."""
    b = z.size
    if b < 2:
        return 0
    best_d, best = 0, math.inf
    for d in range(b // 2 + 1):
        rest = z[d:]
        if rest.size < 2:
            break
        score = float(((rest - rest.mean()) ** 2).sum()) / rest.size ** 2
        if score < best - 1e-12:
            best_d, best = d, score
    return best_d


def steadiness(tps: Sequence[float], *, batch: int = BATCH, min_batches: int = MIN_STEADY_BATCHES,
               target: float | None = None) -> Steadiness:
    """The progress series (TPS per second, oldest first) judged: warm-up, steady or not, and
    the steady mean's 95% interval. With a `target`, a trend counts only when it moved the TPS by
    more than the target across the steady part (a smaller one cannot change the answer)."""
    z = batch_means(tps, batch)
    if z.size < min_batches:
        return Steadiness(len(tps), 0, False, float(np.mean(tps)) if len(tps) else 0.0, math.inf)
    d = mser_truncation(z)
    rest = z[d:]
    # a steady part still trending (its batch means' regression slope significant at 5%, in the
    # spirit of Geweke's test of the early against the late part) is not steady yet
    drifting = False
    if rest.size >= 3:
        fit = lazy.stats().linregress(np.arange(rest.size), rest)
        moved = abs(float(fit.slope)) * (rest.size - 1) / max(float(rest.mean()), 1e-9)
        drifting = float(fit.pvalue) < 0.05 and (target is None or moved > target)
    mean = float(rest.mean())
    if rest.size < min_batches or mean <= 0:
        return Steadiness(len(tps), d * batch, False, mean, math.inf)
    half = float(lazy.stats().t.ppf(0.975, rest.size - 1)) * float(rest.std(ddof=1)) / math.sqrt(rest.size) / mean
    return Steadiness(len(tps), d * batch, not drifting, mean, half)


@dataclass
class SteadyWatch:
    """Fed pgbench's progress points one by one while a step runs: says when to stop (the steady
    part's interval within `target`, after `min_s`), and when it first could."""

    target: float  # relative half-width, 0.02 = ±2%
    min_s: int = 20
    last: Steadiness | None = None
    steady_at_s: int | None = None  # first second at which the interval was within target

    def __post_init__(self) -> None:
        self.tps: list[float] = []

    def add(self, tps: float) -> bool:
        """One more second of progress; True: the answer is known, stop the step."""
        self.tps.append(tps)
        if len(self.tps) % BATCH:
            return False
        self.last = steadiness(self.tps, target=self.target)
        if self.last.within(self.target) and len(self.tps) >= self.min_s:
            self.steady_at_s = len(self.tps)
            return True
        return False
