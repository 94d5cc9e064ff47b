"""The server's own side of a step, as typed records: what its WAL, its checkpoints, its I/O and
its queries' CPU did during the bench phase (the change of pg_stat_wal, pg_stat_bgwriter or
pg_stat_checkpointer, pg_stat_io and pg_stat_kcache between the phase's start and its end), and
the benchmark database's pg_stat_database (DatabaseStep, its own name/delta rows; ServerRestart
when the server started again in between). Made by collect.serverstats, collect.kcache and
collect.pgstats; written by store.writer, each record of RECORDS into its TABLE (its columns are
the record's fields); read back by store.db, judged by analyze.serverside and analyze.cpus. A
figure the server's version does not have is None."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pgknee.model.kinds import Read, Rows, StoredRow, kind, stored_value


class _InItsTable:
    """A record stored as one row of its TABLE (statement insert_TABLE), its fields the columns."""

    __slots__ = ()
    TABLE: ClassVar[str] = ""

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return ((f"insert_{self.TABLE}", (as_row(self),)),)

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (Read(cls.TABLE, columns(cls)),)

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[Any, ...]:
        """A row each (pg_stat_io has several a step)."""
        cols = columns(cls)
        return tuple(from_row(cls, dict(zip(cols, row, strict=True))) for row in tables[0])


@kind
@dataclass(frozen=True, slots=True)
class WalStep(_InItsTable):
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


@kind
@dataclass(frozen=True, slots=True)
class CheckpointStep(_InItsTable):
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


@kind
@dataclass(frozen=True, slots=True)
class IoStep(_InItsTable):
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


@kind
@dataclass(frozen=True, slots=True)
class KcacheStep(_InItsTable):
    """pg_stat_kcache's change for the benchmark's database (when the extension is installed
    there): the CPU time and the bytes read and written of its queries, from the kernel's own
    accounting (getrusage), a server figure that needs no access to its /proc."""

    TABLE: ClassVar[str] = "step_kcache"

    user_s: float
    system_s: float
    read_bytes: float
    write_bytes: float


@kind
@dataclass(frozen=True, slots=True)
class DatabaseStep:
    """pg_stat_database's change for the benchmark database over the bench phase, read once its
    counters settled (backends report them as they go idle). A counter the server's version lacks
    is None (active_time, idle_in_transaction_time, session_time and the session counts from 14).
    Stored as name/delta rows (step_pg_stat_database), as every run has been."""

    xact_commit: float | None = None
    xact_rollback: float | None = None
    blks_read: float | None = None
    blks_hit: float | None = None
    tup_returned: float | None = None
    tup_fetched: float | None = None
    tup_inserted: float | None = None
    tup_updated: float | None = None
    tup_deleted: float | None = None
    conflicts: float | None = None
    temp_files: float | None = None
    temp_bytes: float | None = None
    deadlocks: float | None = None
    blk_read_time: float | None = None
    blk_write_time: float | None = None
    session_time: float | None = None
    active_time: float | None = None
    idle_in_transaction_time: float | None = None
    sessions: float | None = None
    sessions_abandoned: float | None = None
    sessions_fatal: float | None = None
    sessions_killed: float | None = None
    # not pg_stat_database's: the tables (and their TOAST tables, and the catalogs) autovacuum vacuumed
    # and analyzed in the benchmark database, pg_stat_all_tables' sums. Its workers' transactions are
    # commits in this database too (measured: 119 for 40 tables vacuumed and analyzed, 1.5 each)
    autovacuum_count: float | None = None
    autoanalyze_count: float | None = None

    @property
    def maintenance(self) -> float:
        """Tables autovacuum vacuumed or analyzed over the step (each a commit or two here)."""
        return (self.autovacuum_count or 0.0) + (self.autoanalyze_count or 0.0)

    def items(self) -> Iterator[tuple[str, float]]:
        """The stored form: (counter, change) for the counters the server has."""
        for f in dataclasses.fields(self):
            if (v := getattr(self, f.name)) is not None:
                yield f.name, v

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return (("insert_pg_stat_database", [{"name": k, "delta": v} for k, v in self.items()]),)

    @classmethod
    def stored_in(cls) -> tuple[Read, ...]:
        return (Read("step_pg_stat_database", ("name", "delta")),)

    @classmethod
    def loaded(cls, tables: tuple[Rows, ...]) -> tuple[DatabaseStep, ...]:
        return (cls.of_items({str(k): float(v) for k, v in tables[0]}),)

    @classmethod
    def of_items(cls, d: Mapping[str, float]) -> DatabaseStep:
        return cls(**{f.name: float(d[f.name]) for f in dataclasses.fields(cls) if f.name in d})


DATABASE_COUNTERS = tuple(f.name for f in dataclasses.fields(DatabaseStep))


@kind
@dataclass(frozen=True, slots=True)
class ServerRestart:
    """The server started again between the bench phase's two reads of pg_stat_database (its start
    time moved): its counters do not continue the old ones, and the step has no DatabaseStep."""

    started_at: float  # epoch seconds, as the first read saw it
    started_again_at: float | None  # as the second did

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return ()  # the step keeps it as a fault (model.facts.Faults.server_restarted)


@kind
@dataclass(frozen=True, slots=True)
class StatementsStep:
    """A captured workload's replay over the step: each captured statement's calls and time (ms)
    on the target, pg_stat_statements' change from the bench phase's start until the step's end,
    found by the statement's fingerprint (workloads.captured.mix). Read back with the run's
    statements as captured (store.db.Store.statement_mix)."""

    rows: tuple[tuple[str, int, float], ...]  # (statement id, calls, total ms)

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        return (("insert_step_statements", self.rows),)


ServerRecord = WalStep | CheckpointStep | IoStep | KcacheStep
RECORDS: tuple[type[WalStep], type[CheckpointStep], type[IoStep], type[KcacheStep]] = (
    WalStep, CheckpointStep, IoStep, KcacheStep)
BY_TABLE: dict[str, type[ServerRecord]] = {r.TABLE: r for r in RECORDS}


def columns(kind: type[Any]) -> tuple[str, ...]:
    """The record's fields: its table's columns after step_id."""
    return tuple(f.name for f in dataclasses.fields(kind))


def as_row(record: Any) -> dict[str, Any]:
    """A record (a dataclass) as its table's named values (booleans as 0 and 1)."""
    values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    return {name: stored_value(v) for name, v in values.items()}


def from_row(kind: type[Any], row: dict[str, Any]) -> Any:
    """A record back from its table's row (or a side file's), typed as its fields say."""
    return kind(**{f.name: as_field(f, row.get(f.name)) for f in dataclasses.fields(kind)})


def as_field(f: dataclasses.Field[Any], v: Any) -> Any:
    """A stored value as the field's type says (its annotation as text: 'int | None', 'bool')."""
    kind = str(f.type)
    if v is None:
        return None
    if kind.startswith("bool"):
        return bool(v)
    if kind.startswith("int"):
        return int(v)
    if kind.startswith("float"):
        return float(v)
    return str(v)
