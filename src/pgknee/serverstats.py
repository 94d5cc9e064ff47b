"""The server's own side of a step, as typed records: what its WAL, its checkpoints, its I/O and
its queries' CPU did during the bench phase (the change of pg_stat_wal, pg_stat_bgwriter or
pg_stat_checkpointer, pg_stat_io and pg_stat_kcache between the phase's start and its end).
Made by collect.serverstats and collect.kcache, written by store.writer into the record's TABLE
(its columns are the record's fields), read back by store.db, judged by analyze.serverside and
analyze.machine. A figure the server's version does not have is None."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class WalStep:
    """pg_stat_wal's change (PostgreSQL 14+). Writes and syncs: pg_stat_wal's own up to 17,
    pg_stat_io's rows of object 'wal' from 18 (which moved them there); their times are counted
    only with track_wal_io_timing (up to 17) or track_io_timing (18)."""

    TABLE: ClassVar[str] = "step_wal"

    records: int
    fpi: int  # full-page images
    bytes: float
    buffers_full: int  # WAL written because wal_buffers was full
    writes: int | None
    syncs: int | None
    write_ms: float | None
    sync_ms: float | None


@dataclass(frozen=True, slots=True)
class CheckpointStep:
    """Checkpoints that ended during the phase: pg_stat_bgwriter's counters up to 16,
    pg_stat_checkpointer's from 17 (which moved them). `done` (18+) counts the checkpoints
    performed; before 18 a timed checkpoint the server skipped (nothing to write) counts as timed
    too. A checkpoint's counters are reported when it ends."""

    TABLE: ClassVar[str] = "step_checkpoints"

    source: str  # the view read
    timed: int
    requested: int
    done: int | None
    buffers_written: int
    write_ms: float
    sync_ms: float
    running_at_start: bool  # a checkpoint was writing when the phase began (its wait event said so)
    running_at_end: bool

    @property
    def ended(self) -> int:
        """Checkpoints that ended in the phase, skipped ones left out where the server says."""
        return self.done if self.done is not None else self.timed + self.requested


@dataclass(frozen=True, slots=True)
class IoStep:
    """One row of pg_stat_io's change (PostgreSQL 16+): a backend type's I/O on an object in a
    context. Bytes are op_bytes x operations up to 17, the server's own from 18."""

    TABLE: ClassVar[str] = "step_io"

    backend_type: str
    object: str
    context: str
    reads: int
    read_ms: float
    writes: int
    write_ms: float
    writebacks: int
    extends: int
    hits: int
    evictions: int
    reuses: int
    fsyncs: int
    fsync_ms: float
    read_bytes: float
    write_bytes: float


@dataclass(frozen=True, slots=True)
class KcacheStep:
    """pg_stat_kcache's change for the benchmark's database (when the extension is installed
    there): the CPU time and the bytes read and written of its queries, from the kernel's own
    accounting (getrusage), a server figure that needs no access to its /proc."""

    TABLE: ClassVar[str] = "step_kcache"

    user_s: float
    system_s: float
    read_bytes: float
    write_bytes: float


ServerRecord = WalStep | CheckpointStep | IoStep | KcacheStep
RECORDS: tuple[type[WalStep], type[CheckpointStep], type[IoStep], type[KcacheStep]] = (
    WalStep, CheckpointStep, IoStep, KcacheStep)
BY_TABLE: dict[str, type[ServerRecord]] = {r.TABLE: r for r in RECORDS}


def columns(kind: type[ServerRecord]) -> tuple[str, ...]:
    """The record's fields: its table's columns after step_id."""
    return tuple(f.name for f in dataclasses.fields(kind))


def as_row(record: ServerRecord) -> dict[str, Any]:
    """The record as its table's named values (booleans as 0 and 1)."""
    values = {name: getattr(record, name) for name in columns(type(record))}
    return {name: int(v) if isinstance(v, bool) else v for name, v in values.items()}


def from_row(kind: type[ServerRecord], row: dict[str, Any]) -> ServerRecord:
    """A record back from its table's row (or a side file's), typed as its fields say."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        v = row.get(f.name)
        if v is None:
            values[f.name] = None
        elif f.type in ("bool",):
            values[f.name] = bool(v)
        elif f.type.startswith("int"):
            values[f.name] = int(v)
        elif f.type.startswith("float"):
            values[f.name] = float(v)
        else:
            values[f.name] = str(v)
    return kind(**values)
