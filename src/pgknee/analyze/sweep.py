"""One variant across its client counts, as its Data Summary shows it: each metric per count,
its change against the first count and the count where it is best; the schedule lag of an
open-loop variant. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pgknee.analyze.summary import pct_change
from pgknee.analyze.view import Group, RunView, Spread
from pgknee.model.results import StepRecord


class Metric(StrEnum):
    TPS = "tps"
    LAT_AVG = "lat_avg"
    LAT_STDDEV = "lat_stddev"
    P50 = "p50"
    P95 = "p95"
    P99 = "p99"
    LAT_MAX = "lat_max"
    TRANSACTIONS = "transactions"


# the metrics in the table's order, and whether more is better (throughput) or less (latency)
METRICS: tuple[tuple[Metric, bool], ...] = (
    (Metric.TPS, True), (Metric.LAT_AVG, False), (Metric.LAT_STDDEV, False), (Metric.P50, False),
    (Metric.P95, False), (Metric.P99, False), (Metric.LAT_MAX, False), (Metric.TRANSACTIONS, True))


def metric_of(g: Group, metric: Metric) -> Spread | None:
    value: Spread | None = getattr(g, metric.value)
    return value


@dataclass(frozen=True)
class MetricRow:
    metric: Metric
    values: tuple[Spread | None, ...]  # per client count
    changes: tuple[float | None, ...]  # % against the first count (None for the first itself)
    best: str | None  # the label of the count where it is best


@dataclass(frozen=True)
class Sweep:
    variant: str
    groups: tuple[Group, ...]
    metrics: tuple[MetricRow, ...]
    # open loop: the schedule lag's mean and p99 per count (medians over the repetitions)
    lag: tuple[tuple[Spread | None, ...], tuple[Spread | None, ...]] | None
    repeated: bool  # some count ran more than once: the spreads over the repetitions mean something


def sweep(view: RunView, variant: str) -> Sweep:
    groups = tuple(g for g in view.groups if g.variant == variant)
    lagged = any(s.lag_avg_ms is not None for g in groups for s in g.done)
    return Sweep(variant, groups, tuple(_metric_row(groups, m, more) for m, more in METRICS),
                 (_per_count(groups, lambda s: s.lag_avg_ms), _per_count(groups, lambda s: s.lag_p99_ms))
                 if lagged else None,
                 any(g.tps is not None and g.tps.n > 1 for g in groups))


def _metric_row(groups: tuple[Group, ...], metric: Metric, more_is_better: bool) -> MetricRow:
    values = tuple(metric_of(g, metric) for g in groups)
    base = values[0] if values else None
    changes = tuple(pct_change(v.value, base.value) if v is not None and base is not None and i else None
                    for i, v in enumerate(values))
    valid = [(v.value, g) for v, g in zip(values, groups, strict=True) if v is not None]
    best = (max if more_is_better else min)(valid, key=lambda x: x[0])[1].label if valid else None
    return MetricRow(metric, values, changes, best)


def _per_count(groups: tuple[Group, ...], get: Callable[[StepRecord], float | None]) -> tuple[Spread | None, ...]:
    return tuple(Spread.of([get(s) for s in g.done]) for g in groups)
