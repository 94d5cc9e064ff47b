"""An adaptive sweep (pgknee run --until-answer): which client counts to measure next so that
the recommendation's interval shrinks fastest, and when to stop. Pure: it reads the steps
measured so far as a RunView and asks the recommendation (analyze/recommend.py) what it knows.

The step grid. Counts are chosen on a grid over the allowed range lo..hi: every count below 16,
then one-eighth of the power of two below the count (16, 18, .., 30, 32, 36, .., 60, 64, 72, ..),
so about 6 to 12% apart; hi is always on it. "One step" around a count is its grid neighbours.

Where it starts. A coarse geometric sweep: lo, 2 lo, 4 lo, .. below hi, and hi.

What it chooses next (one count per round, `per_round` to take more):
* a step out of line with its neighbours (analyze/curve.py): measured again first, as a repetition;
* the region that can move the answer: the grid counts inside the recommendation's 95% interval,
  the grid neighbours of the recommended count, the counts between the best measured and its
  neighbours (the peak, or the plateau's level, lies there), and the counts between which the
  measured p99 crosses the latency target. Without a count (peak not reached) it is the top of the range, between the
  two largest counts of the coarse sweep, where a peak or a plateau would show, and the knee's
  neighbours; with one, being next to the knee is a role (below) of a count already in it;
* in that region, the count not measured yet where the model's bootstrap fits disagree most: the
  width of their 95% band of predicted TPS there, relative to its median, counted once more for
  every role the count has (inside the interval, next to the recommended count, beside the best,
  the knee, the p99 crossing);
* when every count in the region is measured: one more repetition at the count in the region
  with the fewest repetitions (the widest band among those), up to `max_reps` (not when the peak
  is not reached: repetitions inside the range show no peak beyond it).

When it stops (the first that holds):
* "answer known": the answer is known to one grid step: its 95% interval holds at most two
  adjacent grid counts, the recommended count among them, the curve levelling off or peaking
  (settled, not "for now"); and the evidence is there: the grid neighbours of the answer
  measured, five counts in all, the recommended count measured twice (until then these are the
  counts it measures next);
* "no answer possible": the recommendation is withheld (the client set the pace), open loop,
  or the range is too small for a curve (fewer than three grid counts);
* "budget spent": the caller can afford no further step (`affordable` batches left);
* "no better step to take": every count of the region is measured `max_reps` times (the
  interval is as narrow as this noise allows), or the peak lies beyond the range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.recommend import Recommendation, recommend
from pgknee.analyze.usl import Fit, usl
from pgknee.analyze.view import RunView

FINE_BELOW = 16  # every count below this is on the grid
MIN_COUNTS = 5  # counts measured before an answer is called known (the model has three parameters)

ANSWER_KNOWN = "answer-known"
BUDGET_SPENT = "budget-spent"
NO_BETTER_STEP = "no-better-step"
NO_ANSWER = "no-answer"


def resolution(n: int) -> int:
    """The grid's step at count n: 1 below 16, then one-eighth of the power of two below n."""
    return 1 if n < FINE_BELOW else 2 ** (n.bit_length() - 4)


def grid(lo: int, hi: int) -> tuple[int, ...]:
    """The counts the adaptive sweep may choose, lo..hi (both on it)."""
    if lo < 1 or hi < lo:
        raise ValueError(f"no client counts in {lo}..{hi}")
    out, n = [], lo
    while n < hi:
        out.append(n)
        n += resolution(n)
    return (*out, hi)


def coarse(lo: int, hi: int) -> tuple[int, ...]:
    """The first sweep: lo, 2 lo, 4 lo, .. below hi, and hi."""
    out, n = [], lo
    while n < hi:
        out.append(n)
        n *= 2
    return (*out, hi)


def neighbours(n: float, g: Sequence[int]) -> tuple[int, int]:
    """The grid counts just below and just above n (n itself at an end of the grid, or both
    sides of it when n is on the grid)."""
    below = max((x for x in g if x < n), default=g[0])
    above = min((x for x in g if x > n), default=g[-1])
    return below, above


def answer_counts(span: tuple[int, int], g: Sequence[int]) -> tuple[int, ...]:
    """The grid counts inside the answer's 95% interval lo..hi."""
    lo, hi = span
    return tuple(x for x in g if lo <= x <= hi)


def within_one_step(rec: Recommendation, g: Sequence[int]) -> bool:
    """The answer is known to one step: its 95% interval holds at most two adjacent grid counts,
    the recommended one among them, on a curve that levels off or peaks (not 'for now')."""
    if rec.verdict not in ("peaks", "levels-off") or not rec.settled or rec.connections is None:
        return False
    if rec.counts_interval is None:
        return False
    counts = answer_counts(rec.counts_interval, g)
    return len(counts) <= 2 and rec.connections in counts


@dataclass(frozen=True)
class Settings:
    """What the answer is (the recommendation's own options) and where it may be looked for."""

    lo: int
    hi: int
    fraction: float = 0.95
    p99_target_ms: float | None = None
    batch: int = 1  # repetitions measured at a chosen count in one round (the plan's --reps)
    max_reps: int = 3  # repetitions of one count, at most
    per_round: int = 1  # counts chosen per round


@dataclass(frozen=True)
class Next:
    """The counts to measure next (one batch each), or why the sweep stops."""

    counts: tuple[int, ...]
    why: str
    stopped: str | None = None  # ANSWER_KNOWN, BUDGET_SPENT, NO_BETTER_STEP, NO_ANSWER
    recommendation: Recommendation | None = None


@dataclass(frozen=True)
class _Candidate:
    count: int
    band: float  # the bootstrap fits' 95% band of TPS at the count, relative to its median
    roles: tuple[str, ...]

    @property
    def score(self) -> float:
        return self.band * (1 + len(self.roles))


def repetitions(view: RunView, variant: str) -> dict[int, int]:
    """Repetitions by client count, failed attempts included (a count that fails is not tried
    without end)."""
    out: dict[int, int] = {}
    for g in view.groups:
        if g.variant == variant:
            out[g.clients] = out.get(g.clients, 0) + len(g.steps)
    return out


def next_step(view: RunView, variant: str, s: Settings, *, affordable: int) -> Next:
    """The next counts to measure (at most `affordable` batches, all on the grid of s.lo..s.hi),
    or why the sweep stops."""
    g = grid(s.lo, s.hi)
    done = repetitions(view, variant)
    first = [c for c in coarse(s.lo, s.hi) if c not in done]
    if len(g) < 3:
        return Next((), f"no answer possible: the range {s.lo}..{s.hi} holds fewer than three counts", NO_ANSWER)
    if first:
        return _afford(Next(tuple(first), "coarse sweep: " + ", ".join(map(str, first)) + " clients"), affordable)
    rec = recommend(view, variant, fraction=s.fraction, p99_target_ms=s.p99_target_ms)
    if within_one_step(rec, g):
        assert rec.counts_interval is not None and rec.connections is not None
        gaps = _evidence_gaps(rec, g, done, s)
        if gaps:
            return _afford(Next(tuple(c for c, _ in gaps[:s.per_round]), "; ".join(w for _, w in gaps[:s.per_round]),
                                None, rec), affordable)
        counts = "..".join(map(str, answer_counts(rec.counts_interval, g)))
        return Next((), f"answer known: recommended {rec.connections}, its 95% interval {counts} within one step",
                    ANSWER_KNOWN, rec)
    if rec.verdict in ("withheld", "open-loop", "not-enough-data"):
        return Next((), f"no answer possible: {rec.headline()}", NO_ANSWER, rec)
    again = [c for c in rec.outliers if c in g and done.get(c, 0) + s.batch <= s.max_reps]
    if again:  # a step out of line: measured again before anything is read from where it is
        return _afford(Next(tuple(again[:s.per_round]), "; ".join(
            f"one more repetition at {c}: out of line with its neighbours" for c in again[:s.per_round]), None, rec),
            affordable)
    region = _region(view, variant, rec, g, s)
    chosen = _choose(rec, region, done, s)
    if not chosen.counts:
        return chosen
    return _afford(chosen, affordable)


def _evidence_gaps(rec: Recommendation, g: Sequence[int], done: dict[int, int], s: Settings) -> list[tuple[int, str]]:
    """What an answer the model knows to one step still needs before it is called known: the grid
    neighbours of the answer measured, MIN_COUNTS counts in all (a fit of three parameters to
    four points is sure of itself on no evidence), the recommended count measured twice."""
    assert rec.counts_interval is not None and rec.connections is not None
    n = rec.connections
    counts = answer_counts(rec.counts_interval, g)
    lo, hi = neighbours(min(counts[0], n), g)[0], neighbours(max(counts[-1], n), g)[1]
    near = sorted((c for c in g if c not in done), key=lambda c: (abs(c - n), c))
    out = [(c, f"{c} clients: next to the answer ({'..'.join(map(str, counts))}), not measured yet")
           for c in near if lo <= c <= hi]
    more = max(0, MIN_COUNTS - len(done) - len(out))
    out += [(c, f"{c} clients: near the answer, the model wants {MIN_COUNTS} counts measured")
            for c in near if not lo <= c <= hi][:more]
    if not out and done.get(n, 0) < min(2 * s.batch, s.max_reps):
        out.append((n, f"one more repetition at {n}: the recommended count, measured once"))
    return out


def _afford(n: Next, affordable: int) -> Next:
    if affordable <= 0:
        return Next((), f"budget spent: the next step ({n.why}) would not end within it", BUDGET_SPENT,
                    n.recommendation)
    return Next(n.counts[:affordable], n.why, None, n.recommendation)


def _region(view: RunView, variant: str, rec: Recommendation, g: Sequence[int], s: Settings) -> dict[int, list[str]]:
    """The grid counts that can move the answer, each with its roles."""
    roles: dict[int, list[str]] = {}

    def add(counts: Sequence[int], role: str) -> None:
        for c in counts:
            roles.setdefault(c, [])
            if role and role not in roles[c]:
                roles[c].append(role)

    if rec.counts_interval is not None and rec.connections is not None:
        a, b = rec.counts_interval
        add([c for c in g if a <= c <= b], f"inside the 95% interval {a}..{b}")
    else:  # no count: the top of the range, where a peak or a plateau would show
        top = coarse(s.lo, s.hi)[-2:][0]
        add([c for c in g if c >= top], "the top of the range, where the peak would show")
    if rec.answered and rec.measured_best is not None:  # beside the best: where the level (or the peak) lies
        for side in _beside(view, variant, rec.measured_best):
            lo, hi = sorted((rec.measured_best, side))
            add([c for c in g if lo < c < hi], f"between the best measured, at {rec.measured_best}, and {side}")
    if rec.connections is not None:
        add(list(neighbours(rec.connections, g)), f"next to the recommended {rec.connections}")
    if rec.knee is not None:  # where the curve bends: a role inside the region, the region itself without one
        knee_role = f"next to the knee at {rec.knee}"
        near = [c for c in neighbours(rec.knee, g) if c in roles or rec.counts_interval is None]
        add(near, knee_role)
    crossing = _p99_crossing(view, variant, s.p99_target_ms)
    if crossing is not None:
        add([c for c in g if crossing[0] <= c <= crossing[1]],
            f"where p99 crosses {s.p99_target_ms:g} ms ({crossing[0]}..{crossing[1]})")
    return roles


def _beside(view: RunView, variant: str, best: int) -> list[int]:
    """The measured counts on each side of the best."""
    counts = sorted({g.clients for g in view.groups if g.variant == variant and g.tps is not None})
    if best not in counts:
        return []
    i = counts.index(best)
    return [counts[j] for j in (i - 1, i + 1) if 0 <= j < len(counts)]


def _p99_crossing(view: RunView, variant: str, target: float | None) -> tuple[int, int] | None:
    """The measured counts between which the median p99 crosses the target."""
    if target is None:
        return None
    pts = sorted((g.clients, g.p99.value) for g in view.groups if g.variant == variant and g.p99 is not None)
    for (c0, p0), (c1, p1) in zip(pts, pts[1:], strict=False):
        if p0 <= target < p1:
            return c0, c1
    return None


def _choose(rec: Recommendation, region: dict[int, list[str]], done: dict[int, int], s: Settings) -> Next:
    """The unmeasured count of the region where the fits disagree most; else a repetition; else
    stop."""
    bands = _bands(rec.fit, sorted(region))
    fresh = [_Candidate(c, bands[c], tuple(region[c])) for c in region if c not in done]
    if fresh:
        best = sorted(fresh, key=lambda x: (-x.score, x.count))[:s.per_round]
        return Next(tuple(x.count for x in best), "; ".join(_why(x) for x in best), None, rec)
    again = [_Candidate(c, bands[c], tuple(region[c])) for c in region if done.get(c, 0) + s.batch <= s.max_reps
             and rec.verdict != "not-identified"]  # repetitions inside the range show no peak beyond it
    if again:
        best = sorted(again, key=lambda x: (done.get(x.count, 0), -x.score, x.count))[:s.per_round]
        return Next(tuple(x.count for x in best),
                    "; ".join(f"one more repetition at {x.count} (every count around the answer is measured; "
                              f"{_why(x, lead=False)})" for x in best), None, rec)
    if rec.verdict == "not-identified":
        why = f"the peak lies beyond {s.hi} clients, the top of the range (raise it with --clients 1:N:1)"
    elif rec.verdict == "no-count-meets-target":
        why = (f"no count measured meets both {s.fraction:.0%} of the peak and the p99 target, and every count "
               f"where it could is measured {s.max_reps} times")
    elif rec.counts_interval is not None:
        why = (f"every count around the answer is measured {s.max_reps} times; its 95% interval "
               f"{rec.counts_interval[0]}..{rec.counts_interval[1]} is as narrow as this noise allows")
    else:
        why = f"every count that could move the answer is measured {s.max_reps} times ({rec.verdict})"
    return Next((), f"no better step to take: {why}", NO_BETTER_STEP, rec)


def _why(x: _Candidate, *, lead: bool = True) -> str:
    roles = ", ".join(x.roles) if x.roles else "around the answer"
    band = f"the fits disagree by ±{50 * x.band:.0f}% on its TPS" if math.isfinite(x.band) else "no fit yet"
    return (f"{x.count} clients: " if lead else "") + f"{roles}; {band}"


def _bands(f: Fit | None, counts: Sequence[int]) -> dict[int, float]:
    """At each count, the bootstrap fits' 95% band of predicted TPS relative to its median (the
    fits' disagreement: where measuring teaches the model most). 1 without fits."""
    if f is None or not f.samples or not counts:
        return {c: 1.0 for c in counts}
    n = np.asarray(counts, dtype=float)
    curves = np.array([usl(n, p.lam, p.sigma, p.kappa) for p in f.samples])
    lo, mid, hi = np.percentile(curves, [2.5, 50, 97.5], axis=0)
    return {c: float((hi[i] - lo[i]) / mid[i]) if mid[i] > 0 else 1.0 for i, c in enumerate(counts)}
