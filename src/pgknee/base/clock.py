"""Timestamps as the store keeps them (ISO 8601, UTC, milliseconds): shared by the collectors,
which stamp their samples, and the store, which stamps runs and steps; and the one polling loop
every wait of pgknee's goes through."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime


def now_iso() -> str:
    return datetime.now(UTC).isoformat(sep=" ", timespec="milliseconds")


def iso_of(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(sep=" ", timespec="milliseconds")


def polling(timeout_s: float, every_s: float) -> Iterator[float]:
    """The one polling loop (patroni's polling_loop): the seconds waited so far, at once, then
    every `every_s`, the last at `timeout_s`. The caller looks at what it waits for on each and
    leaves the loop when it has come; the loop ends by itself when the time is up."""
    t0 = time.monotonic()
    while True:
        waited = time.monotonic() - t0
        yield waited
        if waited >= timeout_s:
            return
        time.sleep(max(0.0, min(every_s, timeout_s - waited)))
