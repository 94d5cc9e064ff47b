"""What keeps a long run's report small: the timeline's seconds decimated to their lowest and
highest, every dip and peak kept."""

from __future__ import annotations

import random

from pgknee.report.charts import envelope


def test_a_short_series_is_drawn_whole() -> None:
    xs, ys = [1.0, 2.0, 3.0], [10.0, 5.0, 7.0]
    assert envelope(xs, ys, 40) == (xs, ys)


def test_a_long_series_keeps_the_lowest_and_highest_of_each_run() -> None:
    rnd = random.Random(4)
    xs = [float(i) for i in range(600)]
    ys = [1000 + rnd.uniform(-100, 100) for _ in xs]
    ys[123], ys[456] = 5.0, 5000.0  # a stall and a burst
    dx, dy = envelope(xs, ys, 50)
    assert len(dx) == len(dy) <= 50 and dx == sorted(dx)
    assert (123.0, 5.0) in zip(dx, dy, strict=True) and (456.0, 5000.0) in zip(dx, dy, strict=True)
    assert min(dy) == min(ys) and max(dy) == max(ys)
    for b in range(25):  # each run of 24 seconds: its own lowest and highest, at their own times
        run = ys[b * 24:(b + 1) * 24]
        kept = [y for x, y in zip(dx, dy, strict=True) if b * 24 <= x < (b + 1) * 24]
        assert sorted(kept) == sorted({min(run), max(run)})
