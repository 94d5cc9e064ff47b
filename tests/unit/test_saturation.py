"""The evidence of saturation (analyze/saturation.py): the curve's shape, Kneedle checked against
the kneed package's own implementation, the noise draws and the answer's interval."""

from __future__ import annotations

import numpy as np
import pytest
from kneed import KneeLocator

from pgknee.analyze.saturation import count_interval, kneedle, noise_draws, relative_sd, shape_of

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


def test_the_shape_of_a_curve_that_levels_off() -> None:
    pts = CURVES["the demo's direct variant (issue 25)"]
    s = shape_of({n: [x] for n, x in pts}, {2: 0.74, 4: 0.81, 8: 1.60, 16: 2.91, 32: 5.61}, 10.0)
    assert s.doubling_from == 16 and s.growth_pct == pytest.approx(0.334, abs=0.01)
    assert s.levels_off and not s.grows and not s.declines
    assert s.plateau == (4, 8, 16, 32)  # 4,879 is within 10% of 5,407
    assert s.level == pytest.approx((4944.0 + 5389.0) / 2)  # the median of the plateau's four counts
    assert s.latency_ratio == pytest.approx(5.61 / 2.91)


def test_the_shape_of_a_curve_still_growing_and_of_one_that_falls() -> None:
    growing = shape_of({n: [x] for n, x in CURVES["still bending up"]}, {}, 10.0)
    assert growing.grows and not growing.levels_off and growing.growth_pct == pytest.approx(100 * (12000 / 7000 - 1))
    falling = shape_of({n: [x] for n, x in CURVES["a peak then a fall"]}, {}, 10.0)
    assert falling.declines and falling.best_n == 8 and falling.decline_pct == pytest.approx(100 * (1 - 2400 / 3300))
    assert not falling.levels_off


def test_noise_from_repetitions_or_from_the_allowance() -> None:
    assert relative_sd({2: [100.0], 4: [200.0]}, 10.0) == pytest.approx(0.05)  # one repetition: allowance / 2
    reps = {2: [100.0, 102.0, 98.0], 4: [200.0, 204.0, 196.0]}
    assert relative_sd(reps, 10.0) == pytest.approx(0.025)  # at least a quarter of the allowance
    noisy = {2: [100.0, 110.0, 90.0], 4: [200.0, 220.0, 180.0]}
    assert relative_sd(noisy, 10.0) == pytest.approx(0.1)  # their own spread, sd of (1.0, 1.1, 0.9)
    draws = noise_draws({2: [100.0], 4: [200.0]}, 10.0, draws=4000)
    moved = np.array([d[2][0] for d in draws])
    assert abs(moved.mean() - 100.0) < 0.5 and abs(moved.std() - 5.0) < 0.3


def test_the_interval_is_made_of_counts_picked() -> None:
    assert count_interval([8] * 80 + [16] * 12 + [4] * 8) == (8, 16)  # the middle 80%: 4 is in the lowest 10%
    assert count_interval([8] * 89 + [16] * 11) == (8, 16) and count_interval([8] * 91 + [16] * 9) == (8, 8)
    assert count_interval([8] * 97 + [16] * 3, middle=0.95) == (8, 16)
    assert count_interval([8] * 100) == (8, 8)
    assert count_interval([None, None]) is None
