"""The figures of bench/pgbench_cost.py (the bench itself is not a test: it runs pgbench under
valgrind against a server of its own)."""

from __future__ import annotations

import argparse

import pytest
from builders import load_bench

pc = load_bench("pgbench_cost")

VALGRIND = """==4242== Cachegrind, a high-precision tracing profiler
==4242== Command: /usr/lib/postgresql/15/bin/pgbench --no-vacuum ...
==4242==
==4242== I   refs:      1,234,567,890
"""


def test_the_instruction_count_is_read_from_valgrinds_summary() -> None:
    assert pc.instructions(VALGRIND) == 1_234_567_890
    with pytest.raises(RuntimeError, match="no instruction count"):
        pc.instructions("==1== Memcheck, a memory error detector\n")


def test_every_side_takes_every_place_in_turn() -> None:
    orders = [pc.rotation(n) for n in range(4)]
    assert orders[0] == ("bare", "pgknee", "full log", "progress")
    assert orders[1] == ("pgknee", "full log", "progress", "bare")
    for place in range(4):
        assert {o[place] for o in orders} == set(pc.SIDES)


def test_the_verdict_needs_every_round_within_the_target() -> None:
    assert pc.cost_verdict(pc.Spread(1.01, 1.005, 1.03)) == "met"  # 3% inclusive
    assert pc.cost_verdict(pc.Spread(1.02, 1.01, 1.031)) == "not shown"  # one round beyond
    assert pc.cost_verdict(pc.Spread(1.08, 1.031, 1.1)) == "missed"


def test_a_progress_report_is_priced_and_restated_at_full_speed() -> None:
    bare, progress = pc.Round("bare", 1_000_000, 100, 0.0), pc.Round("progress", 1_050_000, 100, 0.0, reports=10)
    assert pc.per_report(progress, bare) == 5_000  # 50,000 more instructions over 10 reports
    assert pc.per_report(pc.Round("progress", 1_000_000, 100, 0.0), bare) == 0.0  # none made: nothing to price
    # pgknee's side: 1,080,000 over 100 transactions, 10 reports of them under valgrind; at full speed
    # (1,000 TPS) a tenth of a report falls on these 100 transactions: 1,030,000 + 500
    pgk = pc.Round("pgknee", 1_080_000, 100, 3.0, reports=10)
    assert pc.at_full_speed(pgk, 5_000, 1000.0) == pytest.approx((1_080_000 - 50_000) / 100 + 5)


def test_the_summary_pairs_each_side_with_its_rounds_bare_run() -> None:
    rounds = [pc.Round("bare", 1000, 10, 0), pc.Round("pgknee", 1020, 10, 5, 2), pc.Round("full log", 1200, 10, 70, 2),
              pc.Round("progress", 1010, 10, 0, 2),
              pc.Round("pgknee", 2060, 20, 5, 2), pc.Round("full log", 2400, 20, 70, 2),
              pc.Round("progress", 2110, 20, 0, 2), pc.Round("bare", 2100, 20, 0)]
    args = argparse.Namespace(clients=4, transactions=5, seconds=10)
    out = pc.summarize(rounds, args, 0.09, 4000.0)
    # under valgrind, round 1: 102 / 100; round 2: 103 / 105 (the bare run of that round, not the median)
    assert out["ratios"]["pgknee"]["low"] == pytest.approx(103 / 105)
    assert out["ratios"]["pgknee"]["high"] == pytest.approx(1.02)
    assert out["ratios"]["full log"]["median"] == pytest.approx((1.2 + 120 / 105) / 2)
    # a report costs 5 instructions in both rounds; at full speed pgknee's 2 reports become 1/4000 s's
    assert out["report_instructions"] == pytest.approx(5.0)
    fast = [(1020 - 10) / 10 / 100 + 5 / 4000 / 100, (2060 - 10) / 20 / 105 + 5 / 4000 / 105]
    assert out["ratios"]["pgknee at full speed"]["median"] == pytest.approx(sum(fast) / 2)
    assert out["verdict"] == "met" and out["log_bytes_per_txn"]["full log"] == 70.0
    assert any("at full speed" in ln and "met (target within 3%)" in ln for ln in out["lines"])
