"""Paired ratios between interleaved variants, their intervals, and the headline."""

from __future__ import annotations

import math

from builders import step

from pgknee.analyze.compare import headline, paired_ratio, saturation_point


def test_paired_ratio_pairs_repetitions_and_gives_a_t_interval() -> None:
    base = [step(rep=1, tps=100.0), step(rep=2, tps=200.0), step(rep=3, tps=150.0)]
    other = [step(rep=1, tps=180.0), step(rep=2, tps=400.0), step(rep=3, tps=300.0)]
    r = paired_ratio(base, other)
    assert r is not None and r.pairs == 3
    logs = [math.log(1.8), math.log(2.0), math.log(2.0)]
    assert abs(r.value - math.exp(sum(logs) / 3)) < 1e-12
    assert r.lo is not None and r.hi is not None and r.lo < r.value < r.hi
    assert r.beyond_noise is True  # drift between reps (100 vs 200) does not hide a 2x difference when paired


def test_one_pair_has_no_interval_and_equal_is_within_noise() -> None:
    one = paired_ratio([step(rep=1, tps=100.0)], [step(rep=1, tps=150.0)])
    assert one is not None and one.value == 1.5 and one.lo is None and one.beyond_noise is None
    same = paired_ratio([step(rep=1, tps=100.0), step(rep=2, tps=110.0)],
                        [step(rep=1, tps=105.0), step(rep=2, tps=104.0)])
    assert same is not None and same.beyond_noise is False
    assert paired_ratio([step(rep=1, tps=100.0)], [step(rep=2, tps=100.0)]) is None  # nothing to pair


def test_saturation_point_and_headline() -> None:
    assert saturation_point([(2, 100.0), (4, 190.0), (8, 200.0), (16, 199.0)]) == 4
    assert saturation_point([]) is None
    r = paired_ratio([step(rep=1, tps=100.0), step(rep=2, tps=100.0)],
                     [step(rep=1, tps=190.0), step(rep=2, tps=210.0)])
    assert r is not None
    text = headline("pipeline", "normal", [(2, r)], 8, 16)
    assert text.startswith("pipeline: x2.00 TPS vs normal at 2 clients (95% interval x1.06..x3.77, 2 pairs)")
    assert "reaches 95% of its best TPS at 8 clients (normal: 16), saturating at fewer connections" in text


def test_headline_prefers_a_difference_beyond_the_noise() -> None:
    """The largest ratio is within the noise (its interval includes 1): the headline names the
    largest one the repetitions can tell apart, as article 000's reader would want."""
    from pgknee.analyze.compare import Ratio

    ratios = [(2, Ratio(1.63, 1.15, 2.32, 3)), (16, Ratio(1.78, 0.93, 3.42, 3)), (32, Ratio(1.73, 1.05, 2.83, 3))]
    text = headline("pipeline", "normal", ratios, None, None)
    assert text.startswith("pipeline: x1.73 TPS vs normal at 32 clients (95% interval x1.05..x2.83, 3 pairs)")
    only_noise = [(16, Ratio(1.78, 0.93, 3.42, 3)), (2, Ratio(1.1, 0.9, 1.3, 3))]
    assert "at 16 clients" in headline("p", "n", only_noise, None, None) and "within the noise" in headline(
        "p", "n", only_noise, None, None)
