"""The Universal Scalability Law fit on synthetic curves with known parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pgknee.analyze.usl import Params, fit, fit_params, next_counts, smallest_n_reaching, usl

TRUE = Params(lam=1000.0, sigma=0.05, kappa=0.002)  # peak at sqrt(0.95 / 0.002) = 21.8 clients


def _curve(counts: list[int], p: Params, reps: int, noise: float, seed: int = 7) -> list[tuple[float, list[float]]]:
    rng = np.random.default_rng(seed)
    return [(float(c), [p.x(c) * (1 + rng.normal(0, noise)) for _ in range(reps)]) for c in counts]


def test_exact_curve_is_recovered() -> None:
    counts = [1, 2, 4, 8, 16, 32, 64]
    p, r2 = fit_params(counts, [TRUE.x(c) for c in counts])
    assert p.lam == pytest.approx(1000, rel=1e-3) and p.sigma == pytest.approx(0.05, abs=1e-3)
    assert p.kappa == pytest.approx(0.002, rel=1e-2) and r2 == pytest.approx(1.0)
    assert p.peak_n == pytest.approx(math.sqrt(0.95 / 0.002), rel=1e-2)


def test_noisy_repetitions_give_intervals_around_the_truth() -> None:
    """One noisy sweep (3% per measurement). Measured over eight seeds, the 95% interval of N*
    held the true peak seven times: bootstraps of small samples run a little narrow."""
    f = fit(_curve([1, 2, 4, 8, 16, 32, 64], TRUE, reps=3, noise=0.03, seed=101))
    assert f.method == "repetitions and residuals" and f.identified
    assert f.peak_n.lo < TRUE.peak_n < f.peak_n.hi
    assert f.kappa.lo < TRUE.kappa < f.kappa.hi and f.kappa.lo > 0
    assert f.peak_x.lo < TRUE.peak_x < f.peak_x.hi


def test_more_noise_widens_the_intervals() -> None:
    quiet = fit(_curve([1, 2, 4, 8, 16, 32, 64], TRUE, reps=3, noise=0.01))
    loud = fit(_curve([1, 2, 4, 8, 16, 32, 64], TRUE, reps=3, noise=0.08))
    assert loud.peak_n.hi - loud.peak_n.lo > 2 * (quiet.peak_n.hi - quiet.peak_n.lo)


def test_a_sweep_that_stops_before_the_plateau_is_not_identified() -> None:
    f = fit(_curve([1, 2, 3, 4, 5], TRUE, reps=3, noise=0.03))  # still climbing at 5 of a peak at 22
    assert not f.identified


def test_one_repetition_uses_the_residuals() -> None:
    f = fit(_curve([1, 2, 4, 8, 16, 32, 64], TRUE, reps=1, noise=0.02))
    assert f.method == "residuals" and f.peak_n.lo < f.params.peak_n < f.peak_n.hi


def test_linear_scaling_has_no_peak() -> None:
    p, _ = fit_params([1, 2, 4, 8], [100, 200, 400, 800])
    assert p.kappa < 1e-9 and p.peak_n > 1000 * 8  # no peak anywhere near the data


def test_fewer_than_three_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="at least three client counts"):
        fit([(1.0, [10.0, 11.0]), (2.0, [19.0, 20.0])])


def test_smallest_n_reaching_a_fraction_of_the_peak() -> None:
    n = smallest_n_reaching(TRUE, 0.95, 100)
    assert n is not None and float(usl(n, TRUE.lam, TRUE.sigma, TRUE.kappa)) >= 0.95 * TRUE.peak_x
    assert float(usl(n - 0.1, TRUE.lam, TRUE.sigma, TRUE.kappa)) < 0.95 * TRUE.peak_x
    assert 10 < n < TRUE.peak_n


def test_next_counts_double_past_the_largest() -> None:
    assert next_counts([1, 2, 4, 8], cpus=2) == [16, 32, 64, 128]
    assert next_counts([1, 2], cpus=8) == [4, 8, 16, 32, 64]


def test_the_band_of_the_bootstrap_fits_holds_the_fitted_curve() -> None:
    from pgknee.analyze.usl import band, fitted_curve

    f = fit(_curve([1, 2, 4, 8, 16, 32, 64], TRUE, reps=3, noise=0.03, seed=101))
    grid = np.linspace(1.0, 64.0, 50)
    lo_hi = band(f, grid)
    assert lo_hi is not None
    lo, hi = lo_hi
    curve = fitted_curve(f.params, grid)
    assert lo.shape == hi.shape == curve.shape == (50,)
    assert (lo <= hi).all() and (lo <= curve * 1.001).all() and (curve <= hi * 1.001).all()
    assert band(f, grid, min_fits=len(f.samples) + 1) is None  # too few fits: no band
