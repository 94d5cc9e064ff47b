"""Kneedle (analyze/saturation.py) checked against the kneed package's own implementation. The
curve itself is read in analyze/curve.py (test_curve.py)."""

from __future__ import annotations

import numpy as np
import pytest
from kneed import KneeLocator

from pgknee.analyze.saturation import kneedle

CURVES = {
    "the demo's direct variant (issue 25)": [(2, 2689.0), (4, 4879.0), (8, 4944.0), (16, 5389.0), (32, 5407.0)],
    "a dense plateau": [(1, 1000.0), (2, 1900.0), (3, 2600.0), (4, 3100.0), (5, 3400.0), (6, 3500.0), (7, 3550.0),
                        (8, 3560.0)],
    "a straight line": [(2, 1000.0), (4, 2000.0), (8, 4000.0), (16, 8000.0), (32, 16000.0)],
    "still bending up": [(2, 1000.0), (4, 2000.0), (8, 3900.0), (16, 7000.0), (32, 12000.0)],
    "a peak then a fall": [(1, 900.0), (2, 1700.0), (4, 2900.0), (8, 3300.0), (16, 3000.0), (32, 2400.0)],
    "two bends": [(2, 2320.0), (4, 4431.0), (8, 4553.0), (16, 5177.0), (32, 5060.0)],
}


def _kneed(points: list[tuple[int, float]]) -> int | None:
    top = max(range(len(points)), key=lambda i: points[i][1])
    rising = points[:top + 1]
    if len(rising) < 3:
        return None
    k = KneeLocator([p[0] for p in rising], [p[1] for p in rising], S=1.0, curve="concave", direction="increasing")
    return None if k.knee is None else int(k.knee)


@pytest.mark.parametrize("name", CURVES)
def test_kneedle_finds_the_knee_kneed_finds(name: str) -> None:
    assert kneedle(CURVES[name]) == _kneed(CURVES[name])


def test_kneedle_on_random_concave_curves_matches_kneed() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        counts = sorted(set(rng.integers(1, 64, size=rng.integers(4, 10)).tolist()))
        cap = rng.uniform(2, 40)
        pts = [(c, float(1000 * c / (1 + c / cap) * (1 + rng.normal(0, 0.03)))) for c in counts]
        assert kneedle(pts) == _kneed(pts), pts


def test_known_knees() -> None:
    assert kneedle(CURVES["the demo's direct variant (issue 25)"]) == 4
    assert kneedle(CURVES["a dense plateau"]) == 4
    assert kneedle(CURVES["a straight line"]) is None and kneedle(CURVES["still bending up"]) is None
    assert kneedle([(1, 100.0), (2, 150.0)]) is None
