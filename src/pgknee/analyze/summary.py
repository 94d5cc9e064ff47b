"""Summaries of measured numbers. Pure functions, no I/O."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from pgknee.model.results import LatencyStats


def latency_stats(lat_ms: np.ndarray) -> LatencyStats | None:
    """Mean, sample stddev, min, p50/p95/p99 (linear interpolation), max, in ms."""
    n = int(lat_ms.size)
    if n == 0:
        return None
    p50, p95, p99 = np.percentile(lat_ms, [50, 95, 99])
    return LatencyStats(
        count=n, mean_ms=float(lat_ms.mean()), stddev_ms=float(lat_ms.std(ddof=1)) if n > 1 else 0.0,
        min_ms=float(lat_ms.min()), p50_ms=float(p50), p95_ms=float(p95), p99_ms=float(p99),
        max_ms=float(lat_ms.max()))


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def pct_change(value: float, base: float) -> float | None:
    return None if not base else 100.0 * (value - base) / base
