"""Which captured statements run together in one transaction, from the evidence of an observation
(pure); the pauses that hold it open are pauses.py's, its script txscript.py's.

The evidence, strongest first:
1. the sampled transactions: pg_stat_activity shows the statement a session runs, or ran last
   while it idles in its transaction (query_id, pg_stat_statements' queryid). Statements seen in
   the same transaction (twice at least, or once when few were seen) are joined; each group is
   ordered by where its statements were seen in their transactions.
2. how the statements' calls move, read every MOVES_S: what the samples did not group (a
   transaction much shorter than their interval shows one statement a sample) joins what it moves
   with, window by window, once the application's rate is taken out (_moving_together).
3. without such samples (compute_query_id off), or when no sampled transaction showed two of its
   statements (transactions much shorter than the sampler's interval): the statements whose calls
   over the window match BEGIN's within 10% make one transaction, those the samples saw ordered by
   how far into their transactions they were seen, the others after them in the capture's order.
BEGIN's calls bound the transactions of every group. A statement that also ran outside its group
keeps a script of its own for the rest of its calls.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.workloads.captured import transactions as tx
from pgknee.workloads.captured.moves import (
    MOVES_S,
    MOVING_BRANCH,
    MOVING_JOIN,
    choices,
    completes,
    correlations,
    same_below,
    series_of,
    spread_ratio,
)

CALLS_MATCH = 0.10
LINK_SHARE = 0.03  # of the sampled transactions either statement was seen in, at least, to join them
SAME_CALLS = 0.02  # statements that run once in every transaction of a type: calls this close
REPEATED = 0.6  # a group whose sampled share says fewer transactions than this of its fewest calls repeats them all


@dataclass(frozen=True)
class Group:
    statements: tuple[str, ...]  # statement ids, in the order they run
    transactions: int  # over the window
    seen_together: int  # sampled transactions that ran two or more of them
    evidence: str
    # seen only alone inside BEGIN ... COMMIT: its own transaction as far as the samples tell, which
    # may split one the sampler was too slow to see whole (more transactions than the application ran)
    alone: bool = False
    # found by how its statements' calls moved (transactions too short for the samples): its count is
    # its statements' calls, and the samples, which rarely saw it, say nothing of repeats
    moved: bool = False
    # the two arms of one choice (a vote inserted one way or the other), found by their sum: each
    # transaction runs one of them at most, under one draw
    choices: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()


def group(calls: dict[str, int], queryids: dict[int, str], seen: Sequence[tx.Transaction],
          begins: int | None, moves: Sequence[dict[int, int]] = ()) -> tuple[list[Group], str]:
    """The transactions of several statements (or of one with the application's work inside),
    and how they were found, in words. `calls`: each captured statement's calls over the window;
    `begins`: BEGIN's (None: pg_stat_statements does not count utility statements); `moves`:
    pg_stat_statements' calls by queryid, read every MOVES_S through the window."""
    sampled = sum(1 for t in seen if t.explicit)
    if begins is not None and begins < sampled:
        # a prepared BEGIN (pgbench -M prepared, a driver's server-side statements) is counted once, when
        # it is prepared, not each time it runs: fewer than the samples saw
        groups, how = group(calls, queryids, seen, None, moves)
        return groups, (f"BEGIN counted {begins} times but {sampled} transactions were sampled inside BEGIN ... "
                        f"COMMIT (a prepared BEGIN is counted when it is prepared, not when it runs): {how}")
    if begins is not None and begins <= 0:
        return [], "no BEGIN in the window: every statement runs in autocommit, as replayed"
    seqs = [([queryids[q] for q in t.statements if q in queryids], t.samples) for t in seen if t.explicit]
    seqs = [(s, n) for s, n in seqs if s]
    if seqs:
        outside = {queryids[q] for t in seen if t.autocommit and not t.explicit for q in t.statements if q in queryids}
        groups, how = _from_samples(calls, seqs, begins)
        series = series_of(moves, queryids)
        groups, how = _moving_together(groups, calls, series, outside, _starts(seen, queryids), how)
        groups = _joined_by_calls(groups, calls, outside | set(series))
        if groups or begins is None:
            return _alone_inside(groups, calls, [s for s, _ in seqs], outside, begins, how)
        # each sampled transaction showed one statement: they run for much less than the sampler's
        # interval, and the calls are the evidence left
        fast = _by_calls(calls, begins, outside, _starts(seen, queryids))
        if fast is None:
            return _alone_inside([], calls, [s for s, _ in seqs], outside, begins, how)
        return _alone_inside([fast], calls, [s for s, _ in seqs], outside, begins, (
            f"{how}; none showed two statements (transactions much shorter than the sampler's "
            "interval): by calls, the statements whose calls match BEGIN's"))
    if begins is None:
        return [], "no sampled transaction showed its statements, and BEGIN is not counted: replayed in autocommit"
    g = _by_calls(calls, begins, set(), {})
    if g is None:
        return [], (f"BEGIN ran {begins} times, but no sampled transaction showed its statements (query_id) and "
                    "no statement's calls match BEGIN's: replayed in autocommit (group them in the manifest)")
    return [g], "by calls: the statements whose calls match BEGIN's (no sampled transaction showed its statements)"


def _moving_together(groups: list[Group], calls: dict[str, int], series: dict[str, list[int]],
                     apart: set[str], starts: dict[str, float], how: str) -> tuple[list[Group], str]:
    """Statements the samples did not group (transactions too short to be seen whole) joined by
    how their calls move window by window: two that move together (correlation MOVING_JOIN or
    more once the rate is out, or their difference as steady as one type's: moves.spread_ratio) are
    one transaction, or one joins the group the samples found; what moves with one
    group only, more weakly (a branch run in some of its transactions), joins it too. Groups the
    samples found are never merged (one statement tied to two is left out), nor does a statement
    seen in autocommit (`apart`) join. New groups and joiners are
    ordered by where their statements start in their transactions (`starts`)."""
    if len(series) < 2:
        return groups, how
    sids, c = correlations(series)
    spread = spread_ratio(series, sids)
    at = {sid: i for i, sid in enumerate(sids)}
    n_windows = len(next(iter(series.values())))
    core = {sid: i for i, g in enumerate(groups) if len(g.statements) > 1 for sid in g.statements}
    free = [sid for sid in sids if sid not in core and sid not in apart]
    parts = _moving_parts(sids, free, core, apart, c, spread, n_windows)
    out = list(groups)
    joined: list[str] = []
    for part in parts:
        old = sorted({core[m] for m in part if m in core})
        new = [m for m in part if m not in core]
        if len(old) > 1:
            continue  # tied to two groups the samples told apart: which one is not known
        if old:
            i = old[0]
            out[i] = _joined(out[i], new, starts, [float(min(spread[at[m], at[x]] for x in part if x != m))
                                                    for m in new], "spread")
            joined += new
        elif len(new) > 1:
            members = tuple(sorted(new, key=lambda m: (m not in starts, starts.get(m, 0.0), m)))
            n = _every_time(calls.get(m, 0) for m in members)
            # each with the member it moves most steadily with (two branches of one choice move apart)
            steady = [min(float(spread[at[a], at[b]]) for b in members if b != a) for a in members]
            out.append(Group(members, n, 0, f"calls moving together window by window over {n_windows} windows of "
                                             f"{MOVES_S * 1000:.0f} ms (each with another: their difference's "
                                             f"spread {min(steady):.2f}-{max(steady):.2f} of two independent "
                                             "types')", moved=True))
            joined += new
    joined += _branches(out, [sid for sid in free if sid not in joined], c, at, starts, n_windows)
    joined += _complements(out, [sid for sid in free if sid not in joined], series, starts)
    out = _branch_blocks(out, c, at, starts, n_windows)
    if joined:
        out = [g for g in out if len(g.statements) > 1 or g.statements[0] not in joined]  # alone no more
        how = (f"{how}; {len(joined)} statement(s) the samples did not group joined by how their calls moved over "
               f"{n_windows} windows of {MOVES_S * 1000:.0f} ms")
    return [dataclasses.replace(g, choices=choices(g.statements, g.transactions, series))
            for g in (out if joined else groups)], how


def _moving_parts(sids: list[str], free: list[str], core: dict[str, int], apart: set[str], c: np.ndarray,
                  spread: np.ndarray, n_windows: int) -> list[list[str]]:
    """The statements that move together: each free one with any statement it moves with (a
    group's statement only when it moves with one group alone), connected."""
    at = {sid: i for i, sid in enumerate(sids)}
    same = same_below(n_windows)
    edges: list[tuple[str, str]] = []
    for a in free:
        strong = [b for b in sids if b != a and b not in apart
                  and (c[at[a], at[b]] >= MOVING_JOIN or spread[at[a], at[b]] < same)]
        tied = {core[b] for b in strong if b in core}
        edges += [(a, b) for b in strong if b not in core or len(tied) == 1]
    return components([*free, *{b for _, b in edges if b in core}], edges)


def _branches(out: list[Group], free: list[str], c: np.ndarray, at: dict[str, int], starts: dict[str, float],
              n_windows: int) -> list[str]:
    """A branch (run in a share p of one type's transactions) follows that type's count, more
    weakly than the type's statements follow each other: once the rate is out, it correlates with
    that group's statements at MOVING_BRANCH at least, four standard errors above nothing, and
    twice what it shows with any other group. Joined in `out`; their ids. (Taking the rate out
    through the windows' total leaves a type's share of it in: a branch in 10% of a type's
    transactions showed 0.48 in an order entry, but 0.03-0.16 in a mix of types of half the
    statements each, where it stays apart. Better a branch apart than a type merged: asked to
    follow the group against the other statements alone, an independent 4% type followed the
    largest group as closely as such a branch.)"""
    floor = max(MOVING_BRANCH, 4.0 / math.sqrt(n_windows))
    joined = []
    for sid in free:
        scores = sorted(((float(np.mean([c[at[sid], at[m]] for m in g.statements if m in at])), i)
                         for i, g in enumerate(out) if len(g.statements) > 1 and any(m in at for m in g.statements)),
                        reverse=True)
        if scores and scores[0][0] >= floor and (len(scores) < 2 or scores[1][0] < scores[0][0] / 2):
            out[scores[0][1]] = _joined(out[scores[0][1]], [sid], starts, [scores[0][0]], "correlation")
            joined.append(sid)
    return joined


def _complements(out: list[Group], free: list[str], series: dict[str, list[int]], starts: dict[str, float]
                 ) -> list[str]:
    """The other arm of a choice (moves.completes): a free statement that completes one group's
    arm joins it (a vote's INSERT of one kind or the other, 39% and 60%: the rarer arm alone,
    (1 - p) / (1 + p) = 0.44, is too near chance over 120 windows), and so does a group found by
    movement whose statements do (a payment's bad credit, its data read and updated in 10% of
    the payments, the other arm of the plain update: it stayed a transaction of its own when the
    samples did not see it inside a payment). Joined to the one group it completes; the free
    statements' ids."""
    if not series:
        return []
    joined = []
    for sid in free:
        fits = {i: f for i, g in enumerate(out) if (f := completes(series[sid], g.statements, g.transactions, series))}
        if len(fits) == 1:
            ((i, (ratio, arm)),) = fits.items()
            out[i] = _joined(out[i], [sid], starts, [ratio], f"the other arm of {arm}'s choice: their sum's spread")
            joined.append(sid)
    for k, g in enumerate(out):
        lead = g.statements[0] if g.moved and len(g.statements) > 1 and g.statements[0] in series else ""
        fits = {i: f for i, h in enumerate(out) if lead and i != k and h.statements
                and (f := completes(series[lead], h.statements, h.transactions, series))}
        if len(fits) == 1:
            ((i, (ratio, arm)),) = fits.items()
            out[i] = _joined(out[i], list(g.statements), starts, [ratio] * len(g.statements),
                             f"the other arm of {arm}'s choice: their sum's spread")
            out[k] = dataclasses.replace(g, statements=())
    out[:] = [g for g in out if g.statements]
    return joined


def _branch_blocks(out: list[Group], c: np.ndarray, at: dict[str, int], starts: dict[str, float],
                   n_windows: int) -> list[Group]:
    """A group found by movement that follows one other group as a branch does (a payment's bad
    credit: two statements in 10% of the payments, moving together, following the payments at
    0.48) is that group's branch, not a type of its own: joined to it, by _branches' rule."""
    floor = max(MOVING_BRANCH, 4.0 / math.sqrt(n_windows))
    for k in [k for k, g in enumerate(out) if g.moved]:
        mine = [at[m] for m in out[k].statements if m in at]
        scores = sorted(((float(np.mean([c[a, at[m]] for a in mine for m in g.statements if m in at])), i)
                         for i, g in enumerate(out) if i != k and len(g.statements) > 1
                         and any(m in at for m in g.statements)), reverse=True)
        if mine and scores and scores[0][0] >= floor and (len(scores) < 2 or scores[1][0] < scores[0][0] / 2) \
                and out[scores[0][1]].transactions > out[k].transactions:
            i = scores[0][1]
            out[i] = _joined(out[i], list(out[k].statements), starts, [scores[0][0]] * len(out[k].statements),
                             "correlation")
            out[k] = dataclasses.replace(out[k], statements=())
    return [g for g in out if g.statements]


def _joined(g: Group, new: list[str], starts: dict[str, float], r: list[float], measure: str) -> Group:
    """Group g with statements joined by their calls' movement, each placed after the last of its
    statements that starts before it in their transactions (at the end when no start is known)."""
    members = list(g.statements)
    for sid in sorted(new, key=lambda m: starts.get(m, math.inf)):
        known = [(i, starts[m]) for i, m in enumerate(members) if m in starts]
        if sid not in starts or not known:
            members.append(sid)
            continue
        before = [i for i, at in known if at <= starts[sid]]
        members.insert(before[-1] + 1 if before else known[0][0], sid)
    said = ", ".join(f"{sid} ({measure} {x:.2f})" for sid, x in zip(new, r, strict=True))
    return dataclasses.replace(g, statements=tuple(members), evidence=f"{g.evidence}; {said} by how its calls moved "
                                                                      "with the group's")


def _starts(seen: Sequence[tx.Transaction], queryids: dict[int, str]) -> dict[str, float]:
    """Where each statement starts in its transaction, s after it began: the median over the
    sampled transactions inside BEGIN ... COMMIT that showed it (so that a client's stall in one
    does not move it), its own start when the sample read it (query_start), else for the first
    seen when the sample saw it: the order of statements seen one at a time."""
    at: dict[str, list[float]] = defaultdict(list)
    for t in seen:
        for i, q in enumerate(t.statements if t.explicit else ()):
            off = t.offsets.get(q, max(0.0, t.first_seen - t.start) if i == 0 else None)
            if q in queryids and off is not None:
                at[queryids[q]].append(off)
    return {sid: statistics.median(v) for sid, v in at.items()}


def _alone_inside(groups: list[Group], calls: dict[str, int], seqs: list[list[str]], outside: set[str],
                  begins: int | None, how: str) -> tuple[list[Group], str]:
    """A statement the samples saw inside BEGIN ... COMMIT but never with another, and never in
    autocommit, that no group took: its own transaction, BEGIN and COMMIT replayed around it (in
    autocommit it would skip their round trips and its snapshot's life: a social network's
    one-statement transactions replayed 18-39% faster than the application). It may have company
    the samples missed (a transaction much shorter than their interval): the evidence says so."""
    grouped = {sid for g in groups for sid in g.statements}
    inside: dict[str, int] = defaultdict(int)
    for s in seqs:
        for sid in set(s):
            inside[sid] += 1
    least = _least(seqs)
    said = ("never with another statement nor in autocommit: a transaction of its own as far as the samples "
            "tell (a transaction much shorter than their interval may hide its company: join them in the "
            "manifest if you know it)")
    alone = [Group((sid,), calls[sid], n, f"seen inside BEGIN ... COMMIT in {n} sampled transactions, {said}", True)
             for sid, n in sorted(inside.items()) if sid not in grouped and sid not in outside and n >= least
             and calls.get(sid, 0) > 0]
    if not alone:
        return groups, how
    return _within([*groups, *alone], begins), (f"{how}; {len(alone)} statement(s) seen only inside BEGIN ... "
                                                "COMMIT, never with another, replayed each in a transaction of "
                                                "its own")


def _by_calls(calls: dict[str, int], begins: int, outside: set[str], offsets: dict[str, float]) -> Group | None:
    """One transaction of the statements whose calls match BEGIN's within 10%, unless a sample saw
    it run in autocommit: those seen inside a transaction first, by how far into it they were seen,
    then the others in the capture's order."""
    members = [sid for sid, n in calls.items() if abs(n - begins) <= CALLS_MATCH * begins and sid not in outside]
    if not members:
        return None
    ordered = sorted(members, key=lambda sid: (sid not in offsets, offsets.get(sid, 0.0)))
    evidence = f"calls within {CALLS_MATCH:.0%} of BEGIN's {begins}"
    if offsets:
        seen = [sid for sid in ordered if sid in offsets]
        evidence += (f"; {', '.join(seen) or 'none'} seen inside BEGIN ... COMMIT, never two in one sample: "
                     "their order is only suggested by how far in each was seen (edit it if you know it)")
    return Group(tuple(ordered), begins, 0, evidence)


def _from_samples(calls: dict[str, int], seen: list[tuple[list[str], int]],
                  begins: int | None) -> tuple[list[Group], str]:
    """Statements seen in one transaction are joined. A statement never seen with another makes a
    transaction of its own only when transactions sampled twice or more showed it alone: one seen
    once in a transaction may have had company the sample missed (it stays in autocommit)."""
    seqs = [s for s, _ in seen]
    alone = defaultdict(int, {s[0]: 0 for s in seqs if len(s) == 1})
    for s, samples in seen:
        if len(s) == 1 and samples >= 2:
            alone[s[0]] += 1
    together: dict[tuple[str, str], int] = defaultdict(int)
    before: dict[tuple[str, str], int] = defaultdict(int)  # (a, b): sampled transactions that ran a before b
    positions: dict[str, list[float]] = defaultdict(list)
    for s in seqs:
        for i, sid in enumerate(s):
            positions[sid].append(i / max(1, len(s) - 1))
            for other in s[i + 1:]:
                together[tuple(sorted((sid, other)))] += 1  # type: ignore[index]
                before[sid, other] += 1
    least = _least(seqs)
    appear = {sid: sum(1 for s in seqs if sid in s) for sid in positions}
    # a pair seen together in a sliver of the transactions either was seen in is chance, not a transaction
    edges = [(a, b) for (a, b), n in together.items() if n >= max(least, LINK_SHARE * min(appear[a], appear[b]))]
    groups = []
    for members in components(list(positions), edges):
        ordered = _in_order(members, before, positions)
        n_seen = sum(1 for s in seqs if set(s) & set(members))
        n = min([*([begins] if begins is not None else []), _every_time(calls.get(m, 0) for m in ordered)])
        if len(ordered) == 1 and alone.get(ordered[0], 0) < max(least, LINK_SHARE * appear[ordered[0]]):
            continue  # no evidence it runs alone in its transaction (two samples inside one statement say little)
        if n > 0:
            groups.append(Group(ordered, n, n_seen, f"seen together in {n_seen} sampled transactions"
                                if len(ordered) > 1 else f"seen alone inside BEGIN ... COMMIT, sampled twice or more, "
                                f"{alone[ordered[0]]} times"))
    groups = _within(groups, begins)
    grouped = sum(g.transactions for g in groups)
    opened = f"the {begins} transactions BEGIN opened" if begins is not None else "the transactions (BEGIN not counted)"
    return groups, (f"by the sampled transactions: {len(seqs)} showed captured statements inside BEGIN ... COMMIT; "
                    f"the groups hold {grouped} of {opened} in the window")


def _least(seqs: list[list[str]]) -> int:
    """The sampled transactions that are evidence of a statement's company: one among fewer than
    twenty sampled, else two."""
    return 1 if len(seqs) < 20 else 2


def _every_time(counts: Iterable[int]) -> int:
    """A transaction type's count from its statements' calls: the value most of them share within
    2% (those that run once in every transaction; a branch runs fewer times, a loop more), the
    larger on a tie; the fewest when no two agree (nothing says which runs every time)."""
    values = sorted(counts)
    if not values:
        return 0
    share = {v: sum(1 for x in values if abs(x - v) <= SAME_CALLS * v) for v in values}
    best = max(values, key=lambda v: (share[v], v))
    if share[best] < 2:
        return values[0]
    return max(x for x in values if abs(x - best) <= SAME_CALLS * best)


def _in_order(members: list[str], before: dict[tuple[str, str], int],
              positions: dict[str, list[float]]) -> tuple[str, ...]:
    """A group's statements in the order the sampled transactions ran them: each next the one with
    the fewest left that ran before it more often than after it (pair by pair: a topological order
    of what the samples say), ties by where in their transactions they were seen."""
    left, out = set(members), []
    while left:
        m = min(left, key=lambda m: (sum(1 for o in left if before[o, m] > before[m, o]),
                                     sum(positions[m]) / len(positions[m]), m))
        out.append(m)
        left.remove(m)
    return tuple(out)


def _joined_by_calls(groups: list[Group], calls: dict[str, int], outside: set[str]) -> list[Group]:
    """A statement the samples never saw with the others (the last before COMMIT runs for well under
    a sample's interval, and no idle follows it inside the transaction) joins the group whose
    transactions its calls match within 10%, unless a sample saw it run in autocommit, or two groups
    match alike (two transaction types as frequent as each other: the calls cannot tell); it runs last."""
    grouped = {sid for g in groups for sid in g.statements}
    out = list(groups)
    for sid, n in sorted(calls.items()):
        if sid in grouped or sid in outside:
            continue
        fits = sorted((abs(n - g.transactions), i) for i, g in enumerate(out)
                      if abs(n - g.transactions) <= CALLS_MATCH * g.transactions)
        if not fits or (len(fits) > 1 and fits[1][0] <= 2 * fits[0][0] + 0.01 * n):
            continue  # no group, or two alike: the calls cannot tell which (it stays apart)
        i = fits[0][1]
        g = out[i]
        out[i] = dataclasses.replace(g, statements=(*g.statements, sid),
                                     evidence=f"{g.evidence}; {sid} by its calls ({n}, as the transactions)")
        grouped.add(sid)
    return out


def _within(groups: list[Group], begins: int | None) -> list[Group]:
    """Each transaction has one BEGIN: groups that would hold more than BEGIN opened share them in
    proportion to how often each was seen."""
    total = sum(g.transactions for g in groups)
    if begins is None or total <= begins:
        return sorted(groups, key=lambda g: -g.transactions)
    seen = sum(max(1, g.seen_together) for g in groups)
    shared = [dataclasses.replace(g, transactions=min(g.transactions, round(begins * max(1, g.seen_together) / seen)))
              for g in groups]
    return sorted((g for g in shared if g.transactions > 0), key=lambda g: -g.transactions)


def counted(groups: list[Group], seen: Sequence[tx.Transaction], queryids: dict[int, str], interval_s: float,
            explicit: float) -> list[Group]:
    """BEGIN not counted: a group's transactions are what most of its statements' calls share
    (_every_time), unless every one of them repeats within the transaction (a delivery's ten
    districts). The counters tell that: the groups would hold more transactions than the
    `explicit` ones they saw (all, less the statements the samples saw run in autocommit). The
    group the samples saw least against its count takes what they say (its share of the sampled
    transactions, weighed by their chance to be sampled, of the counters'), and the next, while
    the excess lasts."""
    share: dict[int, float] = defaultdict(float)
    for t, w in tx.weights([t for t in seen if t.explicit], interval_s):
        ids = {queryids[q] for q in t.statements if q in queryids}
        overlap = {i: len(ids & set(g.statements)) for i, g in enumerate(groups)}
        if ids and max(overlap.values(), default=0) > 0:  # the group it shares most statements with
            share[max(overlap, key=lambda i: (overlap[i], -len(groups[i].statements)))] += w
    total = sum(share.values())
    out = list(groups)
    # a statement seen only alone may be one of several of a transaction too short to be seen whole:
    # its count is no evidence that another group's statements repeat
    excess = sum(g.transactions for g in out if not g.alone) - explicit
    if total <= 0 or excess <= CALLS_MATCH * explicit:
        return out
    for i in sorted(range(len(out)), key=lambda i: share[i] / total * explicit / max(1, out[i].transactions)):
        g = out[i]
        if len(g.statements) < 2 or g.moved:
            continue  # one statement repeating alone in its transaction, or a type the samples hardly saw
        estimate = share[i] / total * explicit
        if excess <= CALLS_MATCH * explicit or estimate >= REPEATED * g.transactions:
            break
        n = max(1, round(estimate))
        excess -= g.transactions - n
        out[i] = dataclasses.replace(g, transactions=n, evidence=(
            f"{g.evidence}; {n} transactions, its statements repeating within each: the groups held more "
            f"transactions than the {round(explicit)} the counters saw, and the samples saw this one least "
            f"({share[i] / total:.0%} of the sampled transactions)"))
    return out


def components(nodes: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """The connected parts of a graph (union-find)."""
    parent = {n: n for n in nodes}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[root(a)] = root(b)
    parts: dict[str, list[str]] = defaultdict(list)
    for n in nodes:
        parts[root(n)].append(n)
    return list(parts.values())
