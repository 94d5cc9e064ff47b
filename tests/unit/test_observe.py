"""workload capture --observe without a server: transactions told from samples of pg_stat_activity,
their percentiles weighed by the chance to be sampled, the counters less pgknee's own statements,
the grouping of statements into transactions, the script's drawn idle time, the manifest's round
trip, and the replay's check against the application."""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from builders import step

from pgknee.analyze.holdcheck import application_terms, hold_check, hold_warnings
from pgknee.model.keys import observed
from pgknee.model.results import ReplayedStatement
from pgknee.model.server import DatabaseStep
from pgknee.workloads.captured import grouping, observe, pauses, txscript
from pgknee.workloads.captured import transactions as tx
from pgknee.workloads.captured.manifest import Manifest, Observation, ScriptEntry, Spread, Statement, load


def _s(pid: int, xs: float | None, state: str, sc: float, qid: int | None = None) -> tx.SessionSeen:
    return tx.SessionSeen(pid, 0.0, xs, state, sc, qid)


def test_a_transaction_ends_exactly_when_its_session_is_seen_idle() -> None:
    samples = [tx.Sample(10.00, (_s(1, 9.99, "active", 9.99, 11),)),
               tx.Sample(10.02, (_s(1, 9.99, "idle in transaction", 10.01, 11),)),
               tx.Sample(10.04, (_s(1, 9.99, "active", 10.035, 12),)),
               tx.Sample(10.06, (_s(1, None, "idle", 10.05),))]
    (t,) = tx.transactions(samples)
    assert t.exact and t.end == 10.05 and t.duration_s == pytest.approx(0.06)
    assert t.statements == [11, 12] and t.explicit and t.samples == 3 and t.idle_samples == 1
    assert t.idle_s == pytest.approx(0.02)  # a third of its samples idle in it


def test_one_ended_when_the_next_began_or_its_session_left() -> None:
    samples = [tx.Sample(1.0, (_s(1, 0.99, "active", 0.99, 5), _s(2, 0.95, "active", 0.95, 5))),
               tx.Sample(1.1, (_s(1, 1.05, "active", 1.05, 5),)),  # 1 began another; 2 disconnected
               tx.Sample(1.2, ())]
    first, second, gone = sorted(tx.transactions(samples), key=lambda t: (t.pid, t.start))
    assert (first.end, first.exact) == (1.05, False)
    assert gone.pid == 2 and gone.end == pytest.approx(1.05)  # halfway to the sample that missed it
    assert second.start == 1.05 and not second.explicit  # one statement, never idle inside: autocommit
    assert second.end == pytest.approx(1.15)  # its session gone too


def test_only_a_statement_that_began_its_transaction_is_taken_for_autocommit() -> None:
    """Measured on PostgreSQL 15 (10,000-11,500 active autocommit statements sampled per protocol):
    under the simple protocol 98% of them had query_start == xact_start, and 99.4% of the 76,000
    inside BEGIN ... COMMIT started later (the equal ones: BEGIN itself); under the prepared and
    extended protocols 63-73% of the autocommit ones started later too (Bind begins the
    transaction). So equality is evidence of autocommit; a later start is evidence of nothing."""
    def at(pid: int, xs: float, qs: float | None) -> tx.SessionSeen:
        return tx.SessionSeen(pid, 0.0, xs, "active", qs, 5, qs)
    samples = [tx.Sample(1.0, (at(1, 0.99, 0.99), at(2, 0.95, 0.951), at(3, 0.9, None))), tx.Sample(1.1, ())]
    alone, later, unknown = sorted(tx.transactions(samples), key=lambda t: t.pid)
    assert alone.autocommit and not later.autocommit and unknown.autocommit  # unknown: as before, autocommit
    assert not any(t.explicit for t in (alone, later, unknown))


def test_a_hidden_session_is_neither_read_nor_taken_for_gone() -> None:
    hidden = tx.SessionSeen(7, 0.0, None, None, None, None)
    samples = [tx.Sample(1.0, (_s(7, 0.9, "active", 0.9, 1),)), tx.Sample(1.1, (hidden,)),
               tx.Sample(1.2, (_s(7, None, "idle", 1.15),))]
    (t,) = tx.transactions(samples)
    assert t.end == 1.15 and t.exact


def test_weights_undo_the_sampling_bias_of_short_transactions() -> None:
    """Half the transactions last 2 ms, half 60 ms, with 25-40 ms between them (so that each seen
    one's end is told exactly); a sampler every 20 ms sees a long one about 30 times as often.
    Unweighted, the sampled median is a long one; weighted, the share of short ones is near half."""
    rng = random.Random(11)
    t, ends, txs = 0.0, [], []
    while t < 600.0:
        d = 0.002 if rng.random() < 0.5 else 0.060
        txs.append((t, t + d))
        t += d + rng.uniform(0.025, 0.040)  # the session idles between them longer than a sample
    samples = []
    k = 0
    for at in (i * 0.02 + 0.013 for i in range(int(600 / 0.02))):
        while k < len(txs) and txs[k][1] < at:
            k += 1
        if k < len(txs) and txs[k][0] <= at:
            samples.append(tx.Sample(at, (tx.SessionSeen(1, 0.0, txs[k][0], "active", txs[k][0], 1, txs[k][0]),)))
        else:  # idle: since its last transaction ended, whose statement began as it did
            last = txs[k - 1] if k else (0.0, 0.0)
            samples.append(tx.Sample(at, (tx.SessionSeen(1, 0.0, None, "idle", last[1], 1, last[0]),)))
        ends.append(at)
    seen = [t for t in tx.transactions(samples) if t.exact]  # an end told exactly: its own statement's
    assert all(abs(t.duration_s - 0.002) < 1e-9 or abs(t.duration_s - 0.06) < 1e-9 for t in seen)
    short_seen = sum(1 for s in seen if s.duration_s < 0.01) / len(seen)
    weighted = tx.weights(seen, 0.02)
    short_weighted = sum(w for s, w in weighted if s.duration_s < 0.01) / sum(w for _, w in weighted)
    assert short_seen < 0.1  # the sampler mostly sees long ones
    assert 0.4 <= short_weighted <= 0.6  # the weights give back the half
    assert tx.weighted_quantile([(s.duration_s, w) for s, w in weighted], 0.9) == pytest.approx(0.06, abs=1e-6)


def test_the_counters_less_pgknee_s_own_statements() -> None:
    before = {"xact_commit": 1000.0, "xact_rollback": 5.0, "active_time": 100.0, "idle_in_transaction_time": 50.0,
              "sessions": 10.0, "at": 100.0}
    after = {"xact_commit": 2110.0, "xact_rollback": 15.0, "active_time": 1180.0,
             "idle_in_transaction_time": 4050.0, "sessions": 30.0, "at": 110.0}
    counts = observe.StatementCounts
    st0 = {1: counts(1, "BEGIN", 100, 1.0, 0), 2: counts(2, "SELECT a FROM t WHERE id = $1", 300, 30.0, 300, 900),
           3: counts(3, "/* pgknee:observe */ SELECT ...", 5, 1.0, 5)}
    st1 = {1: counts(1, "BEGIN", 900, 9.0, 0), 2: counts(2, "SELECT a FROM t WHERE id = $1", 2900, 290.0, 2900, 8700),
           3: counts(3, "/* pgknee:observe */ SELECT ...", 105, 11.0, 105), 4: counts(4, "COMMIT", 800, 8.0, 0)}
    w = observe.summarise(before, after, st0, st1, [], 0.02, own=100, own_ms=80.0)
    o = w.observation
    assert o.transactions_per_s == pytest.approx((1010 + 10) / 10)  # commits less pgknee's 100, rollbacks
    assert o.rollbacks_per_s == 1.0 and o.explicit_per_s == 80.0 and w.begins == 800
    assert o.statements_per_transaction == pytest.approx(2600 / 1020, abs=1e-3)  # not BEGIN, COMMIT, pgknee's
    assert o.hold_ms == pytest.approx((1000 + 4000) / 1020, abs=1e-3)  # active less pgknee's 80 ms, + idle
    assert o.idle_share == pytest.approx(4000 / 5000)
    assert o.explicit_idle_mean_ms == pytest.approx(4000 / 800)
    assert o.new_connections_per_s == 2.0 and o.own_statements == 100
    assert [(s.queryid, s.calls, s.blocks) for s in w.statements] == [(2, 2600, 7800)]  # the application's alone


def _seen(pid: int, start: float, qids: list[int], samples: int = 2, idle: int = 1) -> tx.Transaction:
    return tx.Transaction(pid, start, start, start, samples, idle, qids, start + 0.05, True)


def test_statements_seen_together_make_one_transaction_in_their_order() -> None:
    seen = [_seen(i, float(i), [20, 30, 10] if i % 2 else [20, 30]) for i in range(30)]
    seen += [_seen(99, 99.0, [40], samples=1, idle=1)]  # once, alone: no evidence it runs alone
    groups, how = grouping.group({"s01": 500, "s02": 520, "s03": 480, "s04": 900},
                                 {10: "s03", 20: "s01", 30: "s02", 40: "s04"}, seen, begins=470)
    (g,) = groups
    assert g.statements == ("s01", "s02", "s03") and g.transactions == 470
    assert "31 showed" in how and "470 of the 470" in how


def test_the_order_is_what_the_samples_ran_pair_by_pair() -> None:
    """Issue 39: the order entry's INSERT came first and the SELECT ... FOR UPDATE after the UPDATE it
    guards. Each sampled transaction shows a stretch of A B C D: C D often, A B often, B C twice.
    Where each was seen on average puts C (mostly first of its pair) before B; the pairs do not."""
    seen = [_seen(i, float(i), [3, 4]) for i in range(10)] + [_seen(20 + i, 20.0 + i, [1, 2]) for i in range(10)]
    seen += [_seen(40, 40.0, [2, 3]), _seen(41, 41.0, [2, 3])]
    groups, _ = grouping.group({"A": 100, "B": 100, "C": 100, "D": 100}, {1: "A", 2: "B", 3: "C", 4: "D"}, seen, 100)
    assert [g.statements for g in groups] == [("A", "B", "C", "D")]


def test_a_statement_the_samples_missed_joins_by_its_calls() -> None:
    """The last statement before COMMIT runs for microseconds with no idle after it inside the
    transaction: the samples rarely see it there. Its calls, as many as the group's transactions,
    join it, last; one the samples saw in autocommit does not join."""
    seen = [_seen(i, float(i), [1, 2]) for i in range(30)]
    seen.append(tx.Transaction(77, 200.0, 200.0, 200.0, 1, 0, [4], 200.001, True, True))  # s04 in autocommit
    groups, _ = grouping.group({"s01": 978, "s02": 978, "s03": 975, "s04": 980},
                               {1: "s01", 2: "s02", 3: "s03", 4: "s04"}, seen, begins=978)
    (g,) = groups
    assert g.statements == ("s01", "s02", "s03") and "s03 by its calls (975" in g.evidence


def test_two_transaction_types_as_frequent_are_not_merged() -> None:
    """Issue 39: the order entry (45%) and the payment (43%) merged into one script. Orders seen
    together (s01 s02) and payments (s03 s04), 200 each, and twice, by chance, an order's statement
    with a payment's: a sliver of the transactions either was seen in, not a transaction. A statement
    the samples never saw joins by its calls only the type they match clearly: s05, with the
    payments' calls exactly, joins them; s06, between the two, stays apart."""
    seen = [_seen(i, float(i), [1, 2]) for i in range(200)] + [_seen(300 + i, 300.0 + i, [3, 4]) for i in range(200)]
    seen += [_seen(600, 600.0, [2, 3]), _seen(601, 601.0, [2, 3])]
    calls = {"s01": 4725, "s02": 4725, "s03": 4601, "s04": 4601, "s05": 4601, "s06": 4663}
    groups, _ = grouping.group(calls, {1: "s01", 2: "s02", 3: "s03", 4: "s04", 5: "s05", 6: "s06"}, seen, None)
    assert sorted(g.statements for g in groups) == [("s01", "s02"), ("s03", "s04", "s05")]


def test_a_statement_seen_only_inside_begin_commit_keeps_its_own_transaction() -> None:
    """Issue 39: a social network's transactions are BEGIN, one or two SELECTs of 0.2 ms, COMMIT; a
    5 ms sampler sees each with one statement, idle in its transaction. Replayed in autocommit they
    skipped BEGIN's and COMMIT's round trips and ran 18-39% faster than the application. A
    statement seen there often enough (twice, of 40), and never in autocommit, is its own
    transaction; one seen there once, or seen in autocommit, stays in autocommit."""
    seen = [_seen(i, float(i), [1], samples=1) for i in range(36)] + [_seen(50, 50.0, [2], samples=1)]
    seen += [_seen(60 + i, 60.0 + i, [3], samples=1) for i in range(3)]
    seen.append(tx.Transaction(77, 200.0, 200.0, 200.0, 1, 0, [3], 200.001, True, True))  # s03 in autocommit
    groups, how = grouping.group({"s01": 90000, "s02": 700, "s03": 1000}, {1: "s01", 2: "s02", 3: "s03"}, seen, None)
    assert [(g.statements, g.transactions) for g in groups] == [(("s01",), 90000)]
    assert "a transaction of its own as far as the samples tell" in groups[0].evidence
    assert "1 statement(s) seen only inside BEGIN ... COMMIT" in how
    # counted BEGIN bounds them as it bounds every group
    groups, _ = grouping.group({"s01": 90000, "s02": 700, "s03": 1000}, {1: "s01", 2: "s02", 3: "s03"}, seen, 60000)
    assert [(g.statements, g.transactions) for g in groups] == [(("s01",), 60000)]
    # split from its company, it may count more transactions than the application ran: no evidence
    # that another group repeats its statements (an order entry's payment was taken for one that did)
    pay = grouping.Group(("p1", "p2"), 4300, 40, "payments")
    counted = grouping.counted([pay, *groups], seen, {1: "s01", 2: "s02", 3: "s03"}, 0.005, 4400)
    assert [g.transactions for g in counted] == [4300, 60000]


def _one_at_a_time(sightings: list[tuple[int, float]], first_pid: int) -> list[tx.Transaction]:
    """Transactions each sampled once inside BEGIN ... COMMIT showing one statement, started so many
    ms into it (query_start - xact_start): too short for the samples to show two."""
    out = []
    for i, (q, at_ms) in enumerate(sightings):
        t = _seen(first_pid + i, float(first_pid + i), [q], samples=1)
        t.offsets[q] = at_ms / 1000
        out.append(t)
    return out


def _moves(windows: int, shares: dict[str, float], members: dict[str, dict[int, float]],
           seed: int) -> list[dict[int, int]]:
    """pg_stat_statements' calls read every window, cumulative: each window's transactions (the
    application's rate drifting up and down) drawn among the types by their shares, each type's
    statements run once per transaction, or in a share of them (a branch)."""
    rng = random.Random(seed)
    total: dict[int, int] = defaultdict(int)
    out = [dict(total)]
    for w in range(windows):
        n = int(400 * (1 + 0.3 * math.sin(w / 7)))
        for _ in range(n):
            kind = rng.choices(list(shares), weights=list(shares.values()))[0]
            for q, p in members[kind].items():
                total[q] += 1 if rng.random() < p else 0
        out.append(dict(total))
    return out


def test_statements_whose_calls_move_together_are_one_transaction() -> None:
    """Issue 39: transactions of under a millisecond (an order entry's order status and stock
    level, 4% each; a social network's) are seen one statement at a time, and two types as
    frequent have the same calls. Read every 100 ms, one type's statements move together window by
    window, a branch (60% of a payment) more weakly, two types apart do not: the two-statement
    type joins, the branch joins the payment the samples found, the one-statement types stay
    apart, and no two types merge."""
    qids = {1: "a1", 2: "a2", 3: "b1", 4: "b2", 5: "b3", 6: "c1", 7: "d1", 8: "d2", 9: "e1", 10: "b4"}
    shares = {"A": 0.45, "B": 0.43, "C": 0.04, "D": 0.04, "E": 0.04}
    members = {"A": {1: 1.0, 2: 1.0}, "B": {3: 1.0, 4: 1.0, 5: 0.6, 10: 0.1}, "C": {6: 1.0}, "D": {7: 1.0, 8: 1.0},
               "E": {9: 1.0}}
    moves = _moves(150, shares, members, 7)
    calls = {sid: moves[-1][q] for q, sid in qids.items()}
    seen = [_seen(i, float(i), [1, 2]) for i in range(60)] + [_seen(100 + i, 100.0 + i, [3, 4]) for i in range(60)]
    for t in seen[60:]:
        t.offsets.update({3: 0.0002, 4: 0.001})  # where each starts in its transaction (query_start - xact_start)
    # the short ones, one statement a sample, each where it starts in its transaction
    seen += _one_at_a_time([(6, 0.3), (7, 0.3), (8, 1.9), (9, 0.2), (5, 2.0), (10, 2.5)] * 4, 300)
    groups, how = grouping.group(calls, qids, seen, None, moves)
    by = {g.statements: g for g in groups}
    # a branch in 10% of B's transactions moves too little to be told from chance in this mix: apart
    assert set(by) == {("a1", "a2"), ("b1", "b2", "b3"), ("d1", "d2"), ("c1",), ("e1",), ("b4",)}, by
    # the 60% branch by its difference's spread: (1 - 0.6) / (1 + 0.6) = 0.25
    evidence = by["b1", "b2", "b3"].evidence
    spread = float(evidence.split("b3 (spread ")[1].split(")")[0])
    assert 0.15 < spread < 0.35, evidence
    assert "calls moving together window by window" in by["d1", "d2"].evidence
    assert by["d1", "d2"].transactions == calls["d1"] and by["c1",].alone and by["e1",].alone
    assert "joined by how their calls moved over 150 windows of 100 ms" in how
    # without the reads, as before: the samples' groups, the rest each alone
    groups, _ = grouping.group(calls, qids, seen, None)
    assert {g.statements for g in groups} == {("a1", "a2"), ("b1", "b2"), ("b3",), ("b4",), ("c1",), ("d1",),
                                              ("d2",), ("e1",)}


def test_a_branch_of_two_statements_joins_the_type_it_follows() -> None:
    """Issue 39: an order entry's bad credit (two statements in 10% of the payments) moved as one
    group of its own (its statements together, spread 0.00) and followed the payments at 0.48 once
    the rate was out: the payments' branch, not a type. A group as short that follows nothing (a
    stock level, 0.15) stays a type; so does one that follows two groups alike."""
    sids = ["p1", "p2", "x1", "x2", "s1", "s2", "n1", "n2"]
    at = {sid: i for i, sid in enumerate(sids)}
    c = np.eye(len(sids))
    for a, b, r in [("x1", "p1", 0.48), ("x1", "p2", 0.47), ("x2", "p1", 0.5), ("x2", "p2", 0.46),
                    ("s1", "p1", 0.15), ("s2", "p2", 0.12), ("s1", "n1", 0.1), ("x1", "n1", 0.05)]:
        c[at[a], at[b]] = c[at[b], at[a]] = r
    groups = [grouping.Group(("p1", "p2"), 4000, 40, "payments"), grouping.Group(("n1", "n2"), 4200, 50, "orders"),
              grouping.Group(("x1", "x2"), 400, 0, "moved", moved=True),
              grouping.Group(("s1", "s2"), 380, 0, "moved", moved=True)]
    out = grouping._branch_blocks(list(groups), c, at, {"p1": 0.001, "p2": 0.002, "x1": 0.003}, 180)
    assert [g.statements for g in out] == [("p1", "p2", "x1", "x2"), ("n1", "n2"), ("s1", "s2")]
    assert "x1 (correlation 0.48)" in out[0].evidence
    for a, b in [("x1", "n1"), ("x1", "n2"), ("x2", "n1"), ("x2", "n2")]:
        c[at[a], at[b]] = c[at[b], at[a]] = 0.45  # follows the orders as closely: which is not known
    assert [g.statements for g in grouping._branch_blocks(list(groups), c, at, {}, 180)] == \
        [g.statements for g in groups]


def test_an_application_of_one_short_type_is_one_transaction() -> None:
    """Issue 39: a voting service runs one 3 ms transaction of four statements (its insert one of
    two, 39% and 60%). Nothing moves apart from the application's rate, so correlation once the
    rate is out reads nothing; the differences between its statements' calls are still steadier
    than two independent types' could be: one transaction, the branches in it."""
    qids = {1: "v1", 2: "v2", 3: "v3", 4: "v4", 5: "v5"}
    moves = _moves(150, {"V": 1.0}, {"V": {1: 1.0, 2: 0.99, 3: 0.99, 4: 0.39, 5: 0.6}}, 3)
    calls = {sid: moves[-1][q] for q, sid in qids.items()}
    seen = _one_at_a_time([(1, 0.2), (2, 0.8), (3, 1.4), (4, 2.0), (5, 2.0)] * 6, 0)
    (g,), how = grouping.group(calls, qids, seen, None, moves)
    assert g.statements[:3] == ("v1", "v2", "v3") and set(g.statements[3:]) == {"v4", "v5"}, g
    assert g.transactions == calls["v1"] and "5 statement(s) the samples did not group" in how


def test_without_begin_a_group_whose_every_statement_repeats_is_told_by_the_counters() -> None:
    """Issue 39: a delivery runs each of its statements once per district, ten times a transaction:
    its statements' calls (3,300) are ten times its transactions. BEGIN not counted (prepared), the
    counters saw 8,130 explicit transactions where the groups' calls say 11,100: the group the
    samples saw least against its count (the delivery) takes their share, and no other."""
    groups = [grouping.Group(("n1", "n2"), 4000, 50, "orders"), grouping.Group(("p1", "p2"), 3800, 40, "payments"),
              grouping.Group(("d1", "d2"), 3300, 9, "deliveries")]
    qids = {1: "n1", 2: "n2", 3: "p1", 4: "p2", 5: "d1", 6: "d2"}
    seen = ([_seen(i, float(i), [1, 2]) for i in range(40)] + [_seen(100 + i, 100.0 + i, [3, 4]) for i in range(36)]
            + [_seen(200 + i, 200.0 + i, [5, 6]) for i in range(4)])
    got = grouping.counted(groups, seen, qids, 0.005, 8130.0)
    # the deliveries take the samples' word: 4 of the 80 sampled transactions, of the counters' 8,130
    assert [g.transactions for g in got[:2]] == [4000, 3800] and got[2].transactions == round(4 / 80 * 8130)
    assert "repeating within each" in got[2].evidence
    assert grouping.counted(groups, seen, qids, 0.005, 11100.0) == groups  # the counters agree: nothing repeats


def test_the_groups_hold_no_more_transactions_than_begin_opened() -> None:
    """Each transaction has one BEGIN: a three-statement group and a statement seen alone in its
    transaction (both plausible from the calls) share BEGIN's 100 by how often each was seen."""
    seen = [_seen(i, float(i), [1, 2, 3]) for i in range(30)] + [_seen(100 + i, 100.0 + i, [4]) for i in range(10)]
    groups, how = grouping.group({"s01": 100, "s02": 100, "s03": 100, "s04": 100},
                                 {1: "s01", 2: "s02", 3: "s03", 4: "s04"}, seen, begins=100)
    assert sum(g.transactions for g in groups) <= 100 and [g.transactions for g in groups] == [75, 25]
    assert "100 of the 100 transactions BEGIN opened" in how
    # BEGIN not counted (track_utility off): the samples alone, bounded by the calls
    groups, how = grouping.group({"s01": 90, "s02": 95, "s03": 99}, {1: "s01", 2: "s02", 3: "s03"}, seen[:30], None)
    assert [g.transactions for g in groups] == [90] and "BEGIN not counted" in how


def test_a_prepared_begin_counted_once_is_not_taken_for_no_transactions() -> None:
    """pgbench -M prepared (and a driver's server-side statements) prepare BEGIN once per session:
    pg_stat_statements counts it then, 2 calls for 2 clients however many transactions ran (checked
    on PostgreSQL 15: 100 transactions, BEGIN 2 calls; 100 under -M extended and simple). Fewer
    BEGINs than the transactions the samples saw inside one: the samples decide, as if uncounted."""
    seen = [_seen(i, float(i), [1, 2, 3]) for i in range(30)]
    groups, how = grouping.group({"s01": 400, "s02": 400, "s03": 410}, {1: "s01", 2: "s02", 3: "s03"}, seen, 2)
    assert [(g.statements, g.transactions) for g in groups] == [(("s01", "s02", "s03"), 400)]
    assert "BEGIN counted 2 times but 30 transactions were sampled" in how


def test_transactions_too_short_to_be_seen_twice_are_grouped_by_their_calls() -> None:
    """A 0.2 ms transaction under a sampler 20 ms apart: each sampled one shows one statement (23-33 in
    a real 30 s observation, none with two). The statements whose calls match BEGIN's make one
    transaction, ordered by how far into their transactions they were seen; one seen in autocommit
    (s02, also run alone by the application) and one whose calls do not match (s06) stay out."""
    def one(i: int, qid: int, offset_ms: float) -> tx.Transaction:
        return tx.Transaction(i, float(i), i + offset_ms / 1000, i + offset_ms / 1000, 1, 1, [qid], None, False)
    seen = [one(i, 3, 0.15) for i in range(8)] + [one(10 + i, 1, 0.02) for i in range(9)]
    seen += [one(20 + i, 4, 0.09) for i in range(6)]
    seen.append(tx.Transaction(77, 200.0, 200.0, 200.0, 1, 0, [2], 200.001, True, True))  # s02 in autocommit
    # s05, seen running once after its transaction began: no evidence of autocommit, it stays in
    seen.append(tx.Transaction(78, 300.0, 300.0002, 300.0002, 1, 0, [5], 300.001, True, False))
    qids = {1: "s01", 2: "s02", 3: "s03", 4: "s04", 5: "s05", 6: "s06"}
    calls = {"s01": 3587, "s02": 3600, "s03": 3588, "s04": 3588, "s05": 3588, "s06": 8518}
    (g,), how = grouping.group(calls, qids, seen, begins=3587)
    assert g.statements == ("s01", "s04", "s03", "s05") and g.transactions == 3587
    assert "23 showed" in how and "none showed two statements" in how and "by calls" in how
    assert "s01, s04, s03 seen inside BEGIN" in g.evidence
    # two sampled transactions that showed two statements are evidence enough: the samples decide
    seen += [_seen(90, 90.0, [1, 4]), _seen(91, 91.0, [1, 4])]
    (g,), how = grouping.group(calls, qids, seen, begins=3587)
    assert "by calls," not in how and g.statements == ("s01", "s04", "s03", "s05")
    assert "s03 by its calls" in g.evidence


def test_without_samples_the_calls_that_move_with_begin_are_grouped() -> None:
    groups, how = grouping.group({"s01": 1010, "s02": 995, "s03": 5000}, {}, [], begins=1000)
    assert [g.statements for g in groups] == [("s01", "s02")] and "by calls" in how
    assert grouping.group({"s01": 10}, {}, [], begins=0) == ([], "no BEGIN in the window: every statement runs in "
                                                              "autocommit, as replayed")


def test_the_script_draws_the_idle_time_from_its_quantiles() -> None:
    """The pgbench CASE expression, evaluated as pgbench does (integer arithmetic), is the
    piecewise-linear quantile function through the points, and its mean the points' mean."""
    points = [5.0, 10.0, 12.0, 14.0, 16.0, 20.0, 22.0, 25.0, 30.0, 40.0, 70.0, 90.0]
    lines = pauses.sleep_lines(points, gaps=2)
    expr = lines[1].split("case ", 1)[1].rsplit(" else", 1)[0]
    arms = [a.strip() for a in expr.split("when ")[1:]]

    def idle_us(u: int) -> int:
        for arm in arms:
            cond, value = arm.split(" then ")
            if u < int(cond.split("<")[1]):
                v0, rest = value.split(" + (", 1)
                slope, tail = rest.split(") * (:pgknee_u - ", 1)
                lo, span = tail.split(") / ")
                return int(v0) + int(slope) * (u - int(lo)) // int(span)
        raise AssertionError(u)

    assert idle_us(0) == 5000 and idle_us(500) == 20000 and idle_us(999) == pytest.approx(88000, abs=2100)
    mean = statistics.fmean(idle_us(u) for u in range(1000)) / 1000
    assert mean == pytest.approx(sum((points[i] + points[i + 1]) / 2 * (pauses.POINTS[i + 1] - pauses.POINTS[i])
                                     / 100 for i in range(len(points) - 1)), rel=0.02)
    assert lines[2] == "\\set pgknee_gap_us :pgknee_idle_us / 2"


def test_idle_points_are_scaled_to_the_counters_mean() -> None:
    pts = pauses.idle_points([(0.010, 1.0), (0.020, 1.0), (0.030, 1.0)], mean_ms=40.0)
    assert statistics.fmean([10.0, 20.0, 30.0]) * 2 == pytest.approx(40.0)
    assert pts[0] == pytest.approx(20.0) and pts[-1] == pytest.approx(60.0)  # twice the sampled ones
    assert pauses.idle_points([], None) == []


def _observation() -> Observation:
    return Observation(window_s=30.0, interval_s=0.02, samples=1500, transactions_per_s=74.0, rollbacks_per_s=0.0,
                       explicit_per_s=60.0, statements_per_transaction=2.6, hold_ms=37.4, active_ms=2.2,
                       idle_in_transaction_ms=35.2, idle_share=0.94, transaction_ms=Spread(50.0, 69.0, 86.0, 111.0),
                       explicit_idle_ms=Spread(48.0, None, None, None), transactions_seen=574, transactions_exact=446,
                       sessions_open=Spread(8.0, 8.0, 8.0, 8.0), sessions_busy=Spread(3.0, 4.0, 4.0, 4.0),
                       new_connections_per_s=None, think_ms=17.0, hidden_sessions=0, own_statements=379,
                       counters={"xact_commit": 2600.0, "idle_in_transaction_time": 63360.0}, notes=["a note"])


def test_the_manifest_keeps_the_observation_and_leaves_out_what_is_unknown(tmp_path: Path) -> None:
    st = Statement("s01", "SELECT 1 FROM t WHERE id = $1", "read", 10, 1.0, 0.1, 10, 1.0, 1.0, ["public.t"], "f")
    m = Manifest("host=x", "db", "", 170000, "2026-11-26T00:00:00Z", "time", 30, ["public.t"], [st],
                 [ScriptEntry("t01", "t01.sql", 10000, ["s01"], "seen together", [1.0] * 12)], [], _observation(),
                 "by the sampled transactions")
    (tmp_path / "workload.toml").write_bytes(m.to_toml())
    back = load(str(tmp_path))
    assert back == m and back.observed is not None and back.observed.new_connections_per_s is None
    assert back.observed.explicit_idle_mean_ms == pytest.approx(63360.0 / 1800.0)


def test_the_replay_is_checked_against_the_application_step_by_step() -> None:
    env = {observed("hold_ms"): "40.0", observed("idle_share"): "0.9", observed("statements_per_transaction"): "2.6",
           observed("sessions_open_p99"): "50.0", observed("sessions_busy_p99"): "12.0"}
    near = step(step_id=1, clients=2, transactions=1000)
    far = step(step_id=2, clients=32, transactions=1000)
    pgdb = {1: DatabaseStep(active_time=4200.0, idle_in_transaction_time=37000.0),  # 41.2 ms, 90%
            2: DatabaseStep(active_time=30000.0, idle_in_transaction_time=38000.0)}  # 68 ms, 56%
    replayed = [ReplayedStatement(1, "s01", 2600, 1.0), ReplayedStatement(2, "s01", 2000, 1.0)]
    check = hold_check(env, [near, far], pgdb, replayed)
    assert check is not None
    ok, off = check.rows
    assert ok.within and ok.hold_ms == pytest.approx(41.2) and ok.statements_per_transaction == pytest.approx(2.6)
    assert off.misses == ("hold", "idle share", "statements per transaction")
    (line,) = hold_warnings(check)
    assert "c32" in line and "68.0 ms against the application's 40.0 ms" in line
    assert hold_check({}, [near], pgdb, replayed) is None  # not observed: nothing to check
    # a transaction of one statement and 0.6 ms: its two turnarounds are the client machine's, and
    # 0.2 ms each of theirs is allowed (0.7 is within, 17% off); 1.1 ms (+83%) is not
    short = {observed("hold_ms"): "0.6", observed("idle_share"): "0.85", observed("statements_per_transaction"): "1.0"}
    quick = {1: DatabaseStep(active_time=80.0, idle_in_transaction_time=620.0),
             2: DatabaseStep(active_time=80.0, idle_in_transaction_time=1020.0)}
    calls = [ReplayedStatement(1, "s01", 1000, 1.0), ReplayedStatement(2, "s01", 1000, 1.0)]
    within, beyond = hold_check(short, [near, far], quick, calls).rows  # type: ignore[union-attr]
    assert within.within and beyond.misses == ("hold",), (within, beyond)
    terms = application_terms(env, 16)
    assert "40.0 ms per transaction, 90% of it idle" in terms[0]
    assert "fewer than the 50 sessions it keeps open now (12 busy at p99)" in terms[1]


def test_the_client_s_own_turnaround_is_not_slept_twice() -> None:
    """Issue 39: an order entry run by pgbench idled 8.5 ms per transaction over 26 statements
    (0.33 ms between two: pgbench turning around on a loaded machine); the replay slept that too, on
    top of its own pgbench's turnaround, and held its transactions 48 ms against 13. A social
    network's one-statement transactions idled 0.48 ms, two turnarounds (BEGIN to the statement,
    the statement to COMMIT) of the 0.35 ms its sessions paused between transactions; its replay,
    sleeping the draws' tail beyond 0.5 ms, held them 14% longer. The turnarounds (one before each
    statement and one before COMMIT) are taken out of the mean: none of those idles is slept. The
    test application's 20 ms of work between statements is, less 2 ms, its shape kept."""
    fast = [8.5] * len(pauses.POINTS)
    assert pauses.share_slept(fast, 26, pauses.turnaround_ms(0.35)) == 0.0
    assert pauses.share_slept([0.2, *[0.48] * 10, 1.5], 1, pauses.turnaround_ms(0.345)) == 0.0
    assert pauses.turnaround_ms(0.35) == 0.35 and pauses.turnaround_ms(17.0) == pauses.turnaround_ms(None) == 0.5
    working = [40.0] * len(pauses.POINTS)
    slept = pauses.share_slept(working, 3, pauses.turnaround_ms(20.0))
    assert slept == pytest.approx(1 - 4 * 0.5 / 40)
    assert pauses.sleep_lines(working, 2, slept)[2] == "\\set pgknee_gap_us :pgknee_idle_us * 950 / 2000"
    assert pauses.share_slept([0.0] * len(pauses.POINTS), 3, 0.5) == 0.0  # nothing idle, nothing slept
    g = grouping.Group(("s01",), 100, 0, "seen")
    part = txscript.Part("s01", ("\\set s01_p1 random(1, 9)",), "SELECT 1 FROM t WHERE id = :s01_p1;", ())
    quick = txscript.text("t01", g, [part], {}, [0.2, *[0.48] * 10, 1.5], 0.345)
    assert "\\sleep" not in quick and "pgknee_idle_us" not in quick
    assert "no more than 2 turnarounds of 0.34 ms" in quick, quick


def test_the_pace_between_transactions_leaves_the_client_s_turnaround_out(tmp_path: Path) -> None:
    """Issue 39: pgbench running a social network back to back was seen 0.29 ms between its
    transactions (its own turnaround on a loaded 2-CPU machine); replayed as think time on top of
    the replay's own, 8,537 TPS against 10,729. Up to 0.5 ms is the client's own: no pause; an
    application's 17 ms between transactions is replayed as 16.5."""
    from pgknee.cli.run_plan import as_observed
    from pgknee.plan.model import Plan, WorkloadSpec

    st = Statement("s01", "SELECT 1 FROM t WHERE id = $1", "read", 10, 1.0, 0.1, 10, 1.0, 1.0, ["public.t"], "f")
    for seen, replayed in ((0.29, 0.0), (17.0, 16.5)):
        obs = _observation()
        obs = Observation(**{**{f: getattr(obs, f) for f in obs.__dataclass_fields__}, "think_ms": seen})
        m = Manifest("host=x", "db", "", 170000, "2026-11-26T00:00:00Z", "time", 30, ["public.t"], [st],
                     [ScriptEntry("s01", "s01.sql", 10000, ["s01"], "", [])], [], obs, "by the sampled transactions")
        where = tmp_path / str(seen)
        where.mkdir()
        (where / "workload.toml").write_bytes(m.to_toml())
        plan, said = as_observed(Plan(workload=WorkloadSpec(name="captured", path=str(where))))
        assert [v.think_ms for v in plan.variants] == [replayed]
        assert said is not None and ("back to back" in said) == (replayed == 0.0), said


def test_the_other_arm_of_a_choice_joins_by_their_sum() -> None:
    """Issue 39: a vote inserts one row of one kind or the other (39% and 60%, 1% neither). Over
    120 windows (a 12 s observation) the rarer arm alone, (1 - 0.39) / (1 + 0.39) = 0.44 of two
    types' spread, is near chance (four standard errors below 1 is 0.48: it joined in one test
    run of two); here 20% and 79%, 0.67 alone, never. Added to the other arm it moves exactly as
    the vote's every-time statement does: it joins, said so."""
    rng = random.Random(11)
    total: dict[int, int] = defaultdict(int)
    reads = [dict(total)]
    for w in range(120):
        for _ in range(int(250 * (1 + 0.3 * math.sin(w / 7)))):
            for q in (1, 2, 3):
                total[q] += 1
            u = rng.random()
            total[4 if u < 0.2 else 5] += 1 if u < 0.99 else 0
        reads.append(dict(total))
    qids = {1: "v1", 2: "v2", 3: "v3", 4: "v4", 5: "v5"}
    calls = {sid: reads[-1].get(q, 0) for q, sid in qids.items()}
    seen = _one_at_a_time([(1, 0.2), (2, 0.8), (3, 1.4), (4, 2.0), (5, 2.0)] * 6, 0)
    (g,), _ = grouping.group(calls, qids, seen, None, reads)
    assert g.statements[:3] == ("v1", "v2", "v3") and set(g.statements[3:]) == {"v4", "v5"}, g
    assert "v4 (the other arm of v5's choice: their sum's spread" in g.evidence, g.evidence
    assert g.choices == ((("v5",), ("v4",)),)  # one draw chooses: never both, never neither but in 1%


def test_two_independent_branches_are_not_a_choice() -> None:
    """moves.choices on simulated windows of one type: arms drawn by one choice (60% and 39%) are
    found, whatever the rate does; the same shares drawn independently (24% of the transactions run
    both, 24% neither) are not: their sum spreads as a branch does, (1 - p) / (1 + p) and more."""
    from pgknee.workloads.captured import moves as mv

    for exclusive in (True, False):
        rng = random.Random(5)
        series: dict[str, list[int]] = {"e": [], "a": [], "b": [], "r": []}
        for w in range(150):
            counts = dict.fromkeys(series, 0)
            for _ in range(int(200 * (1 + 0.4 * math.sin(w / 9)))):
                u, v = rng.random(), rng.random()
                counts["e"] += 1
                counts["a"] += u < 0.6
                counts["b"] += (0.6 <= u < 0.99) if exclusive else (v < 0.39)
                counts["r"] += rng.random() < 0.3  # a branch of its own
            for k, n in counts.items():
                series[k].append(n)
        got = mv.choices(["e", "a", "r", "b"], sum(series["e"]), series)
        assert got == (((("a",), ("b",)),) if exclusive else ()), (exclusive, got)


def test_a_payment_s_bad_credit_is_one_arm_of_a_choice() -> None:
    """Issue 39: a payment finds its customer by name or by id (60/40), then updates it plainly
    (90%) or, for a bad credit, reads its data and updates that (10%). The samples rarely see the
    rare arm, and placed its read before the plain update: both choices are found, the bad credit's
    two statements one arm, and the script runs the arms next to each other, never both."""
    from pgknee.workloads.captured import moves as mv

    rng = random.Random(3)
    series: dict[str, list[int]] = {k: [] for k in ("e", "id", "name", "bad_read", "plain", "bad_update")}
    for w in range(150):
        counts = dict.fromkeys(series, 0)
        for _ in range(int(120 * (1 + 0.4 * math.sin(w / 9)))):
            counts["e"] += 1
            counts["id" if rng.random() < 0.6 else "name"] += 1
            bad = rng.random() < 0.1
            counts["plain"] += not bad
            counts["bad_read"] += bad
            counts["bad_update"] += bad
        for k, n in counts.items():
            series[k].append(n)
    order = ("e", "id", "name", "bad_read", "plain", "bad_update")
    got = mv.choices(order, sum(series["e"]), series)
    assert {frozenset(pair) for pair in got} == {frozenset({("id",), ("name",)}),
                                                 frozenset({("bad_read", "bad_update"), ("plain",)})}, got
    plain_first = (("plain",), ("bad_read", "bad_update")) in got
    n = sum(series["e"])
    parts = [txscript.Part(sid, (f"\\set {sid}_p1 random(1, 9)",), f"SELECT {i} FROM t WHERE id = :{sid}_p1;", (),
                           sum(series[sid]) / n) for i, sid in enumerate(order)]
    script = txscript.text("t01", grouping.Group(order, n, 0, "moved", moved=True, choices=got), parts, {}, [])
    body = script[script.index("BEGIN;"):]
    ran = [ln.split()[1] for ln in body.splitlines() if ln.startswith("SELECT")]
    assert ran == ["0", "1", "2", *(["4", "3", "5"] if plain_first else ["3", "5", "4"])], body
    assert body.count("\\elif") == 2 and body.count("\\if") == 2, body


def test_a_bad_credit_the_samples_never_saw_joins_its_payment() -> None:
    """Issue 39: in a capture of 12 s the samples saw payments (their plain update in 90%) but never
    the bad credit inside one: its two statements, moving together, became a transaction of their
    own (10% of the payments, its own script). Added to the plain update they move as the payment
    does: they join it, one arm of the choice."""
    rng = random.Random(8)
    total: dict[int, int] = defaultdict(int)
    reads = [dict(total)]
    for w in range(110):
        for _ in range(int(300 * (1 + 0.3 * math.sin(w / 7)))):
            if rng.random() < 0.6:
                for q in (1, 2):
                    total[q] += 1
                for q in ((4, 5) if rng.random() < 0.1 else (3,)):
                    total[q] += 1
            else:
                total[10] += 1
                total[11] += 1
        reads.append(dict(total))
    qids = {1: "p1", 2: "p2", 3: "plain", 4: "bad_read", 5: "bad_update", 10: "o1", 11: "o2"}
    calls = {sid: reads[-1].get(q, 0) for q, sid in qids.items()}
    seen = [_seen(i, float(i), [1, 2, 3]) for i in range(40)] + [_seen(100 + i, 100.0 + i, [10, 11]) for i in range(30)]
    groups, _ = grouping.group(calls, qids, seen, None, reads)
    payment = next(g for g in groups if "p1" in g.statements)
    assert set(payment.statements) == {"p1", "p2", "plain", "bad_read", "bad_update"}, groups
    assert {frozenset(pair) for pair in payment.choices} == {frozenset({("plain",), ("bad_read", "bad_update")})}
    assert len(groups) == 2, groups


def test_the_spread_of_a_difference_tells_one_type_from_two() -> None:
    """moves.spread_ratio against its theory, on simulated windows: two types drawn independently
    about 1 (whatever moves the rate), one type's statements about 0, a branch in 60% of a type's
    transactions (1 - 0.6) / (1 + 0.6) = 0.25."""
    from pgknee.workloads.captured import moves as mv

    qids = {1: "x1", 2: "x2", 3: "y1", 4: "xb"}
    reads = _moves(400, {"X": 0.5, "Y": 0.5}, {"X": {1: 1.0, 2: 1.0, 4: 0.6}, "Y": {3: 1.0}}, 5)
    series = mv.series_of(reads, qids)
    sids = sorted(series)
    r = mv.spread_ratio(series, sids)
    at = {sid: i for i, sid in enumerate(sids)}
    assert 0.8 < r[at["x1"], at["y1"]] < 1.2 and r[at["x1"], at["x2"]] < 0.01
    assert 0.18 < r[at["x1"], at["xb"]] < 0.32
