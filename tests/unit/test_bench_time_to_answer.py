"""The comparison of bench/time_to_answer.py (the bench itself is not a test: it runs an
exhaustive sweep for minutes on a server of its own)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from pgknee.analyze.adaptive import grid

_PATH = Path(__file__).resolve().parents[2] / "bench" / "time_to_answer.py"
_spec = importlib.util.spec_from_file_location("time_to_answer", _PATH)
assert _spec is not None and _spec.loader is not None
tta = importlib.util.module_from_spec(_spec)
sys.modules["time_to_answer"] = tta
_spec.loader.exec_module(tta)

REF = tta.Outcome(wall_s=800.0, steps=24, verdict="recommended", connections=4, interval=(3.2, 4.6),
                  peak_tps=1000.0, peak_at=5, modelled_peak=1010.0, stopped=None)
G = grid(1, 8)


def test_grid_steps_apart() -> None:
    assert tta.steps_apart(4, 4, G) == 0 and tta.steps_apart(4, 5, G) == 1 and tta.steps_apart(6, 3, G) == 3
    wide = grid(1, 40)
    assert tta.steps_apart(16, 18, wide) == 1 and tta.steps_apart(17, 20, wide) == 1  # 17 is off the grid: 18


def test_every_target_met() -> None:
    ada = dataclasses.replace(REF, wall_s=180.0, steps=8, connections=4, peak_tps=970.0,
                              stopped="answer known: recommended 4")
    c = tta.compare(REF, ada, G)
    assert c.wall_ratio == pytest.approx(0.225) and c.wall_ok
    assert c.same_answer and c.answer_steps_apart == 0
    # one grid step away but outside the counts the reference's noise would pick: not the same answer
    assert not tta.compare(REF, dataclasses.replace(ada, connections=5), G).same_answer
    assert c.peak_ratio == pytest.approx(0.97) and c.peak_ok and c.all_ok
    text = "\n".join(tta.table(REF, ada, c))
    assert "wall ratio 0.23 (target <= 0.25): met" in text
    assert "same answer (inside the reference's noise interval), 0 step(s) apart: met" in text
    assert "peak TPS ratio 0.970 (target within 5%): met" in text and "until-answer stopped: answer known" in text
    assert "4 [3.2..4.6]" in text and "1,000 at c5" in text


def test_each_target_missed_on_its_own() -> None:
    slow = tta.compare(REF, dataclasses.replace(REF, wall_s=240.0), G)
    assert not slow.wall_ok and slow.same_answer and slow.peak_ok and not slow.all_ok
    far = tta.compare(REF, dataclasses.replace(REF, wall_s=100.0, connections=6), G)
    assert not far.same_answer and far.answer_steps_apart == 2 and "MISSED" in "\n".join(tta.table(REF, REF, far))
    low = tta.compare(REF, dataclasses.replace(REF, wall_s=100.0, peak_tps=940.0), G)
    assert not low.peak_ok and low.peak_ratio == pytest.approx(0.94)
    high = tta.compare(REF, dataclasses.replace(REF, wall_s=100.0, peak_tps=1051.0), G)
    assert not high.peak_ok


def test_without_a_recommended_count_the_verdicts_must_agree() -> None:
    none = dataclasses.replace(REF, verdict="not-identified", connections=None, interval=None)
    assert tta.compare(none, dataclasses.replace(none, wall_s=100.0), G).same_answer
    assert not tta.compare(none, dataclasses.replace(REF, wall_s=100.0), G).same_answer
    assert not tta.compare(REF, dataclasses.replace(none, wall_s=100.0), G).same_answer
    assert tta.compare(none, none, G).answer_steps_apart is None
