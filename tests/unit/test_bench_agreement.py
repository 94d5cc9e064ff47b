"""bench/answer_agreement.py: steps between two answers on the short sweep's grid, and the verdict."""

from __future__ import annotations

from builders import load_bench

agree = load_bench("answer_agreement")


def test_steps_on_the_short_grid() -> None:
    assert agree.steps_apart(8, 8) == 0 and agree.steps_apart(8, 16) == 1 and agree.steps_apart(4, 16) == 2
    assert agree.steps_apart(6, 8) == 0.5 and agree.steps_apart(6, 4) == 0.5  # between two grid counts
    assert agree.steps_apart(6, 16) == 1.5 and agree.steps_apart(1, 2) == 0  # below the grid: its first count
    assert agree.steps_apart(48, 32) == 0.5


def _a(n: int | None) -> object:
    return agree.Answer("r", None, "levels-off" if n else "not-identified", n, None, "")


def test_agreement_within_one_step() -> None:
    v = agree.agreement(_a(6), [_a(8), _a(8), _a(4), _a(8), _a(8)])
    assert v["all_answered"] and v["within_one_step_of_reference"] and v["within_one_step_of_each_other"]
    assert v["steps_to_reference"] == [0.5, 0.5, 0.5, 0.5, 0.5] and v["largest_spread_steps"] == 1
    v = agree.agreement(_a(6), [_a(8), _a(16), _a(4)])
    assert not v["within_one_step_of_reference"] and not v["within_one_step_of_each_other"]
    v = agree.agreement(_a(8), [_a(8), _a(None)])
    assert not v["all_answered"]
