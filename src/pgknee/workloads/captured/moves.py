"""How captured statements' calls move together, window by window (pure): pg_stat_statements'
calls read every MOVES_S through an observation, and the two measures grouping.py joins
statements by when the samples cannot (transactions much shorter than their interval).

One transaction type's statements move together: each window holds some of its transactions, and
each of its statements ran in all of them (a branch in a share). Two types, however alike their
shares, are drawn independently. Two measures tell them apart:
- the spread of two statements' difference against what two independent types would give
  (spread_ratio): about 1 for two types whatever moves the rate, about 0 for one type, and
  (1 - p) / (1 + p) for a branch run in a share p of its type's transactions;
- correlation once what moves them all is taken out (correlations): 0.98 within a social
  network's types at 1% of its transactions against 0.02 between; a payment's 10% branch 0.48."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# pg_stat_statements' calls read every MOVES_S through the observation
MOVES_S = 0.1
MOVING_WINDOWS = 30  # fewer windows tell nothing
MOVING_CALLS = 30  # over the window, for a statement's movement to be read
MOVING_JOIN = 0.8  # correlation that makes two statements one transaction
# or their difference's spread, as a share of two independent types' (spread_ratio), below this
# (an application of one type: nothing moves apart from it, and correlation has nothing to read)
MOVING_SAME = 0.6
MOVING_BRANCH = 0.3  # and one run in a share of a group's transactions (at least 4 standard errors)


def series_of(moves: Sequence[dict[int, int]], queryids: dict[int, str]) -> dict[str, list[int]]:
    """Each captured statement's calls window by window (the change between two reads), for those
    with calls enough to move (MOVING_CALLS over the window)."""
    if len(moves) < MOVING_WINDOWS + 1:
        return {}
    out = {sid: [b.get(q, 0) - a.get(q, 0) for a, b in zip(moves, moves[1:], strict=False)]
           for q, sid in queryids.items()}
    return {sid: d for sid, d in out.items() if sum(d) >= MOVING_CALLS and min(d) >= 0}


def correlations(series: dict[str, list[int]]) -> tuple[list[str], np.ndarray]:
    """The correlation of each two statements' calls window by window, once what moves them all
    (the application's rate, rising and falling) is taken out: each series less its least-squares
    line on the windows' total. One transaction type's statements move together (its
    transactions in a window, or a share of them for a branch); two types apart, however alike
    their shares, are drawn independently."""
    sids = sorted(series)
    d = np.array([series[sid] for sid in sids], dtype=float)
    total = d.sum(axis=0)
    x = np.vstack([total, np.ones_like(total)]).T
    coef, *_ = np.linalg.lstsq(x, d.T, rcond=None)
    r = d - (x @ coef).T
    sd = r.std(axis=1)
    ok = sd > 1e-9
    c = np.zeros((len(sids), len(sids)))
    if ok.sum() >= 2:
        c[np.ix_(ok, ok)] = np.corrcoef(r[ok])
    return sids, np.nan_to_num(c)


def spread_ratio(series: dict[str, list[int]], sids: list[str]) -> np.ndarray:
    """For each two statements, how steady their calls' difference is, window by window: the
    variance of y - c x (c = their calls' ratio) over what it would be for two types drawn
    independently (their mean calls, y + c² x, as when each transaction picks its type at
    random). About 1 for two types, whatever drives the rate (it cancels in the difference); near
    0 for one type's statements (a transaction split by a window's edge the only difference);
    (1 - p) / (1 + p) for a branch run in a share p of its type's transactions."""
    d = np.array([series[sid] for sid in sids], dtype=float)
    mean = d.mean(axis=1)
    out = np.ones((len(sids), len(sids)))
    for i in range(len(sids)):
        for j in range(i + 1, len(sids)):
            if mean[i] <= 0 or mean[j] <= 0:
                continue
            c = mean[j] / mean[i]
            out[i, j] = out[j, i] = float(np.var(d[j] - c * d[i], ddof=1) / (mean[j] + c * c * mean[i]))
    return out


Arm = tuple[str, ...]


def same_below(n_windows: int) -> float:
    """The spread_ratio under which two statements move as one type's: MOVING_SAME, and four standard
    errors of two types' ratio (1 give or take sqrt(2 / windows)) below 1 at the least."""
    return min(MOVING_SAME, 1.0 - 4.0 * math.sqrt(2.0 / max(1, n_windows)))


def choices(statements: Sequence[str], transactions: int, series: dict[str, list[int]]) -> tuple[tuple[Arm, Arm], ...]:
    """The two arms of a choice among a transaction type's statements (a vote inserted one way or
    the other; a payment's customer updated plainly, or, for a bad credit, its data read and
    updated): two run in a share of its transactions each (under 97%), their shares together no
    more than all of them (within 5%), and their sum moving as the type's every-time statement does
    (spread_ratio under MOVING_SAME and under half of either arm's alone). Two independent branches
    whose shares add to all of them would spread their sum as much as the rarer arm: a choice, about
    0. An arm holds the statements that move with its first as one block does (a share alike,
    spread_ratio under MOVING_SAME). Disjoint pairs, the steadiest first, each arm in the order its
    statements run."""
    members = [m for m in statements if m in series and sum(series[m]) > 0]
    if len(members) < 3 or transactions <= 0:
        return ()
    same = same_below(len(series[members[0]]))
    every = _every(members, transactions, series)
    total = sum(series[every])
    arms = [m for m in members if m != every and sum(series[m]) < 0.97 * total]
    if len(arms) < 2:
        return ()
    r = spread_ratio({m: series[m] for m in [*arms, every]}, [*arms, every])
    at = {m: i for i, m in enumerate(arms)}
    found = sorted(_summed(a, b, series, every, r[at[a], -1], r[at[b], -1]) + (a, b)
                   for i, a in enumerate(arms) for b in arms[i + 1:] if sum(series[a]) + sum(series[b]) <= 1.05 * total)
    found = [f for f in found if f[0] < same and f[0] < min(f[1:3]) / 2]
    out: list[tuple[Arm, Arm]] = []
    taken: set[str] = set()

    def arm(x: str, pair: tuple[str, str]) -> Arm:
        n = sum(series[x])
        return tuple(m for m in arms if m == x or (m not in taken and m not in pair and r[at[m], at[x]] < same
                                                   and abs(sum(series[m]) - n) <= 0.25 * n))

    for *_, a, b in found:
        if {a, b} & taken:
            continue
        one, two = arm(a, (a, b)), arm(b, (a, b))
        if set(one) & set(two):
            continue
        taken |= {*one, *two}
        out.append((one, two))
    return tuple(out)


def _summed(a: str, b: str, series: dict[str, list[int]], every: str, alone_a: float, alone_b: float
            ) -> tuple[float, float, float]:
    """(the spread_ratio of a's and b's sum against the every-time statement, a's alone, b's alone)."""
    both = [x + y for x, y in zip(series[a], series[b], strict=True)]
    return float(spread_ratio({"s": both, "e": series[every]}, ["s", "e"])[0, 1]), float(alone_a), float(alone_b)


def completes(candidate: Sequence[int], statements: Sequence[str], transactions: int, series: dict[str, list[int]]
              ) -> tuple[float, str] | None:
    """(their sum's spread_ratio, the arm) when `candidate`'s calls, added to those of one of a
    group's statements run in a share of its transactions (its arm, under 97%), move as the group's
    every-time statement does: their sum's difference from it as steady as one type's, and half as
    spread as the arm's alone (an independent type added to a branch spreads it more). None else."""
    members = [m for m in statements if m in series and sum(series[m]) > 0]
    if len(statements) < 2 or not members:
        return None
    same = same_below(len(series[members[0]]))
    every = _every(members, transactions, series)
    best: tuple[float, str] | None = None
    for arm in (m for m in members if sum(series[m]) < 0.97 * sum(series[every])):
        both = [a + b for a, b in zip(candidate, series[arm], strict=True)]
        alone = float(spread_ratio({"arm": series[arm], "every": series[every]}, ["arm", "every"])[0, 1])
        ratio = float(spread_ratio({"both": both, "every": series[every]}, ["both", "every"])[0, 1])
        if ratio < same and ratio < alone / 2 and (best is None or ratio < best[0]):
            best = (ratio, arm)
    return best


def _every(members: Sequence[str], transactions: int, series: dict[str, list[int]]) -> str:
    """The group's statement run once in every transaction: its calls nearest the group's count."""
    return min(members, key=lambda m: abs(sum(series[m]) - transactions))
