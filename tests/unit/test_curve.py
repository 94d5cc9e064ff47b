"""The curve read as a whole (analyze/curve.py) and its noise (analyze/noise.py), on the sweeps of
issue 38 that the answer used to get wrong, drawn by bench/calibration.py's generators and fed
through `recommend` as the bench does. Each expectation is the DBA's rule of
docs/reading-the-answer.md applied to the true curve before any noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import load_bench

from pgknee.analyze.curve import between, middle, read
from pgknee.analyze.noise import FLOOR, measure

cal = load_bench("calibration")


def _draws(curve: cal.Curve, counts: tuple[int, ...], noise: float, reps: int, n: int, seed: int = 1,
           outlier: tuple[int, float] | None = None) -> list[object]:
    rng = np.random.default_rng(seed)
    return [cal.answer(*cal.sweep(curve, counts, noise, reps, rng, outlier)) for _ in range(n)]


def test_noise_from_the_repetitions_is_their_spread_robust_to_one_wild_count() -> None:
    """Two counts: their variances pooled. Three or more: the median variance (each of 3
    repetitions has 2 degrees of freedom; the median of chi-square(2) / 2 is ln 2), so that one
    count with a repetition out of line (the 1,733 of a real e-wallet sweep) does not make them all
    noisy."""
    two = {2: [100.0, 102.0, 98.0], 4: [200.0, 210.0, 190.0]}
    logs = [np.log(v) for v in two.values()]
    n = measure(two)
    assert n.source == "repetitions" and n.dof == 4
    assert n.sd == pytest.approx(math.sqrt(sum(float(np.sum((x - x.mean()) ** 2)) for x in logs) / 4))
    wild = {2: [1733.0, 2418.0, 2544.0], 4: [4192.0, 4230.0, 4150.0], 8: [4797.0, 4750.0, 4840.0]}
    median_var = float(np.var(np.log([4192.0, 4230.0, 4150.0]), ddof=1))  # the middle of the three
    n = measure(wild)
    assert n.sd == pytest.approx(math.sqrt(median_var / math.log(2)), rel=1e-3) and n.sd < 0.02


def test_one_repetition_measures_its_noise_from_the_scatter_around_a_smooth_curve() -> None:
    """A curve with a sharp knee (a saturated CPU) moved by ±3% alternately: the broken line follows
    the knee, so what is left is the noise (near 3%), not the bend; a smooth USL curve with no
    noise at all reads as the floor."""
    counts = (1, 2, 4, 8, 16, 32, 64)
    knee = {n: 1000.0 * min(n, 8) for n in counts}
    moved = {n: [x * (1.03 if i % 2 else 0.97)] for i, (n, x) in enumerate(knee.items())}
    n = measure(moved)  # four counts at half the best or more (8..64): too few alone, so all seven
    assert n.source == "scatter" and n.dof == 3 and 0.02 < n.sd < 0.06  # the broken line: 7 - 4
    smooth = {c: [1000.0 * c / (1 + 0.05 * (c - 1) + 0.002 * c * (c - 1))] for c in counts}
    assert measure(smooth).sd == pytest.approx(FLOOR, rel=0.5)


def test_per_second_figures_give_a_floor_corrected_for_their_autocorrelation() -> None:
    """AR(1) seconds (lag-one correlation 0.5) whose mean has a 1% standard error: the floor finds
    about that, where the naive sd / sqrt(n) would say 0.58% (sqrt(3) too small). Alone it measures
    nothing between steps: three counts of one repetition keep the assumed noise, the floor said."""
    rng = np.random.default_rng(3)
    series = {n: [cal.per_second(1000.0, 0.01, 60, rng) for _ in range(5)] for n in (2, 4, 8)}
    n = measure({2: [1000.0], 4: [2000.0], 8: [2500.0]}, series)
    assert n.within is not None and 0.007 < n.within < 0.014
    assert n.source == "assumed" and n.sd == 0.05 and "a floor of 1." in n.text()
    loud = {c: [cal.per_second(1000.0, 0.08, 60, rng) for _ in range(5)] for c in (2, 4, 8)}
    assert measure({2: [1000.0], 4: [2000.0], 8: [2500.0]}, loud).sd > 0.05  # never below the floor


def test_without_anything_to_measure_it_from_the_noise_is_assumed_and_said_so() -> None:
    n = measure({2: [100.0], 4: [200.0], 8: [210.0]}, None, 10.0)
    assert n.source == "assumed" and n.sd == 0.05 and "assumed" in n.text()


def test_a_peak_between_two_counts_is_answered_by_the_count_that_serves_best() -> None:
    """Issue 38, 1: the peak at 22.6, between 16 and 32 (both at 94% of it). The best measured
    count is 16 (8 is at 64%): 16, never 'no count meets the p99 target' with no target, and the
    counts to measure next split the bracket (22 between 16 and 32)."""
    curve = cal.usl(1000.0, 0.0, 1.0 / 512.0)  # N* = sqrt(512) = 22.6
    counts = (2, 4, 8, 16, 32, 64)
    assert cal.truth(curve, counts).count == 16
    exact = cal.answer({n: [curve(n)] for n in counts})
    assert exact.verdict == "peaks" and exact.connections == 16 and 22 in exact.next_counts
    assert "target" not in exact.headline() and "p99" not in exact.headline()
    noisy = _draws(curve, counts, 0.02, 1, 30)
    assert all(r.connections == 16 for r in noisy), [r.headline() for r in noisy if r.connections != 16][:1]


@pytest.mark.parametrize("at", [32, 64])
def test_one_low_step_in_a_plateau_is_out_of_line_and_not_followed(at: int) -> None:
    """Issue 38, 2: flat from 16, one step 15% low (a checkpoint). Not 'peak not reached', not 'no
    count meets the target': 16; inside the sweep the step is out of line, said so, left out and
    measured again."""
    curve = cal.bend(16.0, 40.0)
    counts = (2, 4, 8, 16, 32, 64)
    by_n = {n: [curve(n) * (0.85 if n == at else 1.0)] for n in counts}
    r = cal.answer(by_n)
    assert r.connections == 16 and r.verdict in ("levels-off", "peaks"), r.headline()
    assert "target" not in r.headline()
    if at == 32:
        assert r.outliers == (32,) and r.next_counts[0] == 32
        assert any(x.startswith("the step at 32 clients") and "out of line" in x for x in r.reasons)
    noisy = _draws(curve, counts, 0.02, 1, 30, outlier=(counts.index(at), 0.15))
    assert all(r.verdict != "not-identified" for r in noisy)
    assert sum(r.connections == 16 for r in noisy) >= 27, [r.connections for r in noisy]


def test_slow_growth_beyond_the_noise_is_still_growing() -> None:
    """Issue 38, 3: still 8% a doubling at the top, 3% noise, three repetitions. The rule says it
    still grows (8% > 5.3%); a test at 5% over a doubling's standard error of 2.8% cannot see it
    every time, but most of the time: no longer 'levels off' every time."""
    curve = cal.bend(4.0, 4.0)
    slow = lambda n: curve(n) * (max(n, 4.0) / 4.0) ** math.log2(1.08)  # noqa: E731
    counts = (2, 4, 8, 16, 32, 64)
    assert cal.truth(slow, counts).count is None
    rs = _draws(slow, counts, 0.03, 3, 30, seed=2)
    assert sum(r.verdict == "not-identified" for r in rs) >= 18, [r.verdict for r in rs]
    assert all(r.connections is None or r.connections >= 32 for r in rs)  # never below the top doubling


def test_at_ten_percent_noise_the_interval_holds_the_right_count() -> None:
    """Issue 38, 4: one repetition at 10% noise, a plateau from 8: the 95% interval holds the
    right count in at least 90% of sweeps (it held a DBA's count in 53-73% before)."""
    curve = cal.bend(8.0, 6.0)
    counts = (2, 4, 8, 16, 32, 64)
    right = cal.truth(curve, counts).count
    rs = _draws(curve, counts, 0.10, 1, 40, seed=4)
    spans = [r.counts_interval for r in rs if r.counts_interval is not None]
    assert len(spans) >= 36 and sum(lo <= right <= hi for lo, hi in spans) >= 0.9 * len(spans)


def test_a_sweep_that_sampled_nothing_of_the_server_does_not_claim_nothing_was_saturated() -> None:
    """Issue 38, 5: a growing curve on the embedded server with neither OS samples nor a wait
    profile (--os-interval 0 --sample-interval 0)."""
    r = cal.answer({n: [1000.0 * n] for n in (2, 4, 8, 16, 32)})
    assert r.verdict == "not-identified" and r.unsampled
    assert "nothing was saturated" not in r.headline() and "no sampled resource" not in r.headline()
    assert "whether a resource saturated is unknown: the CPU was not sampled (--os-interval 0)" in r.headline()


def test_the_published_sweeps_get_the_rules_answer() -> None:
    """SPEC SDM91 (Gunther 2007): best at 72 users, 1,853 scripts/h, 36 users at 89% of it: 72
    (then 8% lower by 216 users: within the 6% noise its one repetition's scatter shows, so a peak
    or a level). The ray tracer: 19% more from 32 to 64 CPUs: still growing."""
    what, counts, tps = cal.SPECSDM91
    r = cal.answer({n: [x] for n, x in zip(counts, tps, strict=True)})
    assert r.connections == 72 and r.verdict in ("peaks", "levels-off")
    what, counts, tps = cal.RAYTRACER
    assert cal.answer({n: [x] for n, x in zip(counts, tps, strict=True)}).verdict == "not-identified"


def test_brackets_are_split_geometrically_and_the_interval_is_of_counts_picked() -> None:
    assert between((2, 4, 8, 16, 32, 64), 16, 32) == (22,)
    assert between((2, 4, 8, 16, 32), 4, 32) == (5, 11, 22)
    assert between((1, 2, 3), 1, 3) == ()  # no room between neighbours
    assert middle([8] * 97 + [16] * 3) == (8, 16) and middle([8] * 98 + [16] * 2) == (8, 8)
    assert middle([]) is None


def test_the_reading_names_its_parts() -> None:
    r = read({2: [2000.0], 4: [3700.0], 8: [4600.0], 16: [4800.0], 32: [4820.0], 64: [4790.0]})
    assert r.shape == "levels-off" and r.best == 32 and r.plateau[-1] == 64 and 8 in r.plateau or 16 in r.plateau
    assert r.count(0.95) == 8  # 4,600 is 95.5% of the best
    assert r.lines()[0].startswith("noise ") and r.lines()[-1].startswith("throughput levels off")
