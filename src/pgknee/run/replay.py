"""A captured workload's replay, beside the steps: its statements as captured go to the store
once, and a collector reads each step's share of them from pg_stat_statements on the target
(workloads/captured/mix.py); analyze/resemblance.py compares the two."""

from __future__ import annotations

from collections.abc import Callable

from pgknee.store.writer import RunWriter
from pgknee.targets import Target
from pgknee.workloads import Workload
from pgknee.workloads.captured import Captured
from pgknee.workloads.captured.mix import StatementMix


def statement_mix(workload: Workload, target: Target, writer: RunWriter,
                  say: Callable[[str], None]) -> StatementMix | None:
    """The collector of a captured workload's replay (None for any other workload), its statements
    as captured stored first."""
    if not isinstance(workload, Captured):
        return None
    writer.write_statement_mix(None, workload.captured_rows())
    return StatementMix(lambda: target.endpoint.connect("stats"), workload.fingerprints(), say)
