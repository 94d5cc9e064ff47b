from __future__ import annotations

from pgknee.plan import Plan, Variant
from pgknee.run.schedule import schedule


def test_schedule_single_variant() -> None:
    steps = schedule(Plan(clients=(8, 2, 4), reps=2))
    assert [(s.seq, s.clients, s.rep) for s in steps] == [
        (1, 8, 1), (2, 8, 2), (3, 2, 1), (4, 2, 2), (5, 4, 1), (6, 4, 2)]
    assert {s.variant for s in steps} == {Variant()}


def test_schedule_interleaves_variants_inside_each_clients_rep() -> None:
    a, b = Variant("a", "simple"), Variant("b", "prepared")
    steps = schedule(Plan(clients=(16, 2), reps=2, variants=(a, b)))
    assert [(s.seq, s.clients, s.rep, s.variant.name) for s in steps] == [
        (1, 16, 1, "a"), (2, 16, 1, "b"), (3, 16, 2, "a"), (4, 16, 2, "b"),
        (5, 2, 1, "a"), (6, 2, 1, "b"), (7, 2, 2, "a"), (8, 2, 2, "b")]
    assert steps[1].variant is b


def test_schedule_seq_is_1_to_n() -> None:
    plan = Plan(clients=(2, 4, 8, 16, 32), reps=3, variants=(Variant("a"), Variant("b"), Variant("c")))
    steps = schedule(plan)
    assert [s.seq for s in steps] == list(range(1, 5 * 3 * 3 + 1))
    # each (clients, rep, variant) appears exactly once
    assert len({(s.clients, s.rep, s.variant.name) for s in steps}) == len(steps)


def test_schedule_keeps_duplicate_client_counts() -> None:
    assert [s.clients for s in schedule(Plan(clients=(4, 4)))] == [4, 4]
