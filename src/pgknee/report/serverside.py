"""The server's WAL, checkpoints and I/O per client count (analyze.serverside), with the TPS
beside them; and the same per step for the JSON. Formatting only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table

from pgknee.analyze.serverside import ServerRow, server_side
from pgknee.analyze.view import RunView, Spread
from pgknee.model.keys import collector
from pgknee.model.results import RunData, StepRecord
from pgknee.model.server import as_row
from pgknee.report.cells import across, fmt, matrix, value
from pgknee.report.jsonfields import fields_json

_ROWS: tuple[tuple[str, Callable[[ServerRow], Spread | None], int], ...] = (
    ("TPS", lambda r: r.tps, 1),
    ("WAL bytes per transaction", lambda r: r.wal_bytes_per_txn, 0),
    ("WAL records per transaction", lambda r: r.wal_records_per_txn, 2),
    ("Full-page images per transaction", lambda r: r.fpi_per_txn, 3),
    ("  % of WAL records", lambda r: r.fpi_pct, 2),
    ("WAL MB/s", lambda r: r.wal_mb_s, 2),
    ("WAL buffers full (writes forced)", lambda r: r.wal_buffers_full, 0),
    ("Transactions per WAL sync", lambda r: r.commits_per_sync, 2),
)
_IO_ROWS: tuple[tuple[str, Callable[[ServerRow], Spread | None], int], ...] = (
    ("Client reads/s (relations)", lambda r: r.reads_per_s, 1),
    ("  shared-buffer hit %", lambda r: r.hit_pct, 2),
    ("Client backends' own writes/s", lambda r: r.backend_writes_per_s, 1),
    ("Checkpointer writes/s", lambda r: r.checkpointer_writes_per_s, 1),
    ("Background writer writes/s", lambda r: r.bgwriter_writes_per_s, 1),
)

NOTE = ("WAL per transaction beside the TPS: full-page images are the first change to each page after a "
        "checkpoint, so their share jumps after one. Transactions per WAL sync above 1 is group commit. "
        "Client backends writing buffers themselves means the background writer and checkpointer did not keep "
        "up (shared_buffers, bgwriter_lru_maxpages). The checkpoint check flags a step a checkpoint disturbed.")


def _written(get: Callable[[ServerRow], Spread | None], digits: int) -> Callable[[ServerRow], str]:
    return lambda r: value(get(r), digits)


def server_side_table(view: RunView, variant: str) -> Table | None:
    """The server's side per client count (medians over repetitions); None when not recorded."""
    groups = [g for g in view.groups if g.variant == variant]
    rows = [server_side(view.data, g.done) for g in groups]
    if all(r is None for r in rows):
        return None
    out = [[label, *across(rows, _written(get, digits))] for label, get, digits in _ROWS]
    out.append(["Checkpoints ended (all reps)", *across(rows, lambda r: fmt(r.checkpoints, 0))])
    out.append(["  buffers they wrote", *across(rows, lambda r: fmt(r.checkpoint_buffers, 0))])
    if any(r is not None and r.hit_pct is not None for r in rows):
        out += [[label, *across(rows, _written(get, digits))] for label, get, digits in _IO_ROWS]
    env = view.data.env
    io = env.get(collector("pg_stat_io"), "")
    title = ("Server side — WAL, checkpoints" + (", I/O (pg_stat_io)" if io == "on" else "")
             + "; bench phase, medians over repetitions" + ("" if io in ("", "on") else f"; pg_stat_io {io}"))
    return matrix(title, ["Metric", *[g.label for g in groups]], out)


def step_server_json(data: RunData, s: StepRecord) -> dict[str, Any] | None:
    """A step's records as the store holds them: {"step_wal": {...}, "step_checkpoints": {...},
    "step_io": [...]}, or None when it has none."""
    records = data.server(s.step_id)
    if not records:
        return None
    out: dict[str, Any] = {}
    for r in records:
        row = as_row(r)
        name = r.TABLE.removeprefix("step_")
        if name == "io":
            out.setdefault(name, []).append(row)
        else:
            out[name] = row
    return out


def group_server_json(data: RunData, done: tuple[StepRecord, ...]) -> dict[str, Any] | None:
    row = server_side(data, done)
    if row is None:
        return None
    return fields_json(row)
