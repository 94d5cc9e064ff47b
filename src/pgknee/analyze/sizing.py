"""pgknee size: the articles' back-of-envelope sizing (Little's law, (cores x 2) + spindles),
and what a measured run says about a throughput target. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pgknee.analyze.compare import tps_curve
from pgknee.analyze.view import RunView


@dataclass(frozen=True)
class Sizing:
    tps: float  # the arrival rate to serve
    latency_s: float  # the time each transaction spends in the database
    busy: float  # Little's law: connections busy on average
    busy_whole: int  # rounded up
    cores: int
    spindles: int
    rule_of_thumb: int  # (cores x 2) + spindles


def sizing(tps: float, latency_s: float, cores: int, spindles: int) -> Sizing:
    busy = tps * latency_s
    return Sizing(tps, latency_s, busy, math.ceil(busy), cores, spindles, cores * 2 + spindles)


@dataclass(frozen=True)
class Held:
    """An application as `workload capture --observe` saw it: its rate, how long a transaction
    holds its connection (ms) and of that how long it runs statements or idles inside, and its
    sessions open and busy at p99."""

    tps: float
    hold_ms: float
    active_ms: float | None
    idle_ms: float | None
    open_p99: float | None
    busy_p99: float | None


@dataclass(frozen=True)
class Reach:
    """Where a variant's measured curve reaches a throughput target."""

    variant: str
    tps: float  # the target
    first: int | None  # the smallest client count that reached it
    best: tuple[int, float] | None  # (clients, TPS) of the best count measured


def reach(view: RunView, variant: str, tps: float) -> Reach:
    pts = tps_curve(view, variant)
    reached = [c for c, x in pts if x >= tps]
    return Reach(variant, tps, min(reached) if reached else None, max(pts, key=lambda p: p[1]) if pts else None)
