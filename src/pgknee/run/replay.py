"""A captured workload's replay, beside the steps: its statements as captured go to the store
once, and each step's share of them is read from pg_stat_statements on the target around pgbench
(workloads/captured/mix.py); analyze/resemblance.py compares the two."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from pgknee.base.errors import StoreError
from pgknee.store.writer import RunWriter
from pgknee.targets import Target
from pgknee.workloads import Workload
from pgknee.workloads.captured import Captured
from pgknee.workloads.captured.mix import StatementMix


def start_mix(workload: Workload, target: Target, writer: RunWriter,
              say: Callable[[str], None]) -> StatementMix | None:
    if not isinstance(workload, Captured):
        return None
    writer.write_statement_mix(None, workload.captured_rows())
    return StatementMix(lambda: target.endpoint.connect("stats"), workload.fingerprints(), say)


def end_mix(mix: StatementMix | None, writer: RunWriter, step_id: int) -> None:
    """The step's replay of each statement, stored; a store that cannot take it loses only that
    (the step's own results are written after it, or go to a side file)."""
    if mix is None:
        return
    rows = mix.end()
    try:
        writer.write_statement_mix(step_id, rows)
    except (sqlite3.Error, StoreError) as e:
        mix.say(f"this step's statement mix is not stored: {e}")
