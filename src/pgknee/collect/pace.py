"""How fast the pg_stat_activity sampler may go. Its query reads every backend's entry, so its
cost grows with the backends (bench/sampler_scale.py: under 1 ms of the server's CPU at 100,
about 30 ms at 5,000, and several times that in wall time on a busy machine). A query that takes most
of its interval makes the sampler run back to back: the ticks come late, and its backend takes
a core's share from the benchmark. So the sampler lengthens its interval by itself when the
recent ticks' queries took more than half of it, to the next value of the 1-2-5 series that
leaves them that much room, and keeps it for the rest of the step (each step starts again at
the plan's interval: its backends are another matter). The mean over snapshots (AAS) does not
depend on the rate, only its number of samples, which the step's facts record; the snapshots
before a slowdown weigh more than those after it, which matters only if the load changed then
(it happens within the first ticks of a phase whose query is slow from the start)."""

from __future__ import annotations

import math
import statistics
from collections import deque

BUDGET = 0.5  # the query may take this share of the interval (the median of the recent ticks)
WINDOW = 3  # ticks looked at before deciding: the median of 3 passes over one slow tick
MAX_INTERVAL_S = 5.0  # the slowest the sampler goes (its query is cancelled after 2 s anyway)


def series_125(at_least: float) -> float:
    """The smallest value of the 1-2-5 series (..., 0.1, 0.2, 0.5, 1, 2, 5, ...) >= `at_least`."""
    if at_least <= 0:
        raise ValueError("an interval is positive")
    decade = 10.0 ** math.floor(math.log10(at_least))
    for m in (1, 2, 5, 10):
        v = round(m * decade, 12)
        if v >= at_least * (1 - 1e-9):
            return v
    return round(10 * decade, 12)  # (unreachable: 10 x decade >= at_least)


def slower_interval(current_s: float, took_s: float, budget: float = BUDGET) -> float:
    """The interval to go to when the queries take `took_s`: on the 1-2-5 series, long enough
    that they take at most `budget` of it, longer than `current_s`, at most MAX_INTERVAL_S."""
    want = max(took_s / budget, current_s * (1 + 1e-9))
    return min(series_125(want), max(MAX_INTERVAL_S, current_s))


class Pace:
    """The sampler's interval within a step: the plan's, lengthened as the queries ask."""

    def __init__(self, base_s: float) -> None:
        self.base_s = base_s
        self.interval_s = base_s
        self._recent: deque[float] = deque(maxlen=WINDOW)
        self.took_s = 0.0  # the median query time that lengthened the interval last

    def reset(self) -> None:
        """A new step: the plan's interval again."""
        self.interval_s = self.base_s
        self._recent.clear()

    @property
    def lowered(self) -> bool:
        return self.interval_s > self.base_s

    def observe(self, took_s: float) -> float | None:
        """One tick's query time; the new, longer interval when the recent queries took more than
        the budget of the current one (then the window starts afresh), else None."""
        self._recent.append(took_s)
        if len(self._recent) < WINDOW:
            return None
        median = statistics.median(self._recent)
        if median <= BUDGET * self.interval_s or self.interval_s >= MAX_INTERVAL_S:
            return None
        self.interval_s = slower_interval(self.interval_s, median)
        self.took_s = median
        self._recent.clear()
        return self.interval_s
