"""The server's side of each step (pgknee.model.server): its WAL per transaction beside the TPS,
its checkpoints and its I/O, per client count; and the check that flags a step a checkpoint
disturbed: one ended or was running during its bench phase, or the burst of full-page images
after one inflated its WAL. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.analyze.checks import Check, CheckUnit
from pgknee.analyze.view import Spread
from pgknee.analyze.words import clause, plural
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.results import RunData, StepRecord
from pgknee.model.server import CheckpointStep, IoStep, ServerRecord, WalStep

# a full-page-image burst: the step's FPIs per transaction at least this many times the median of
# its variant's other steps, and its WAL per transaction this much above theirs (the burst costs)
FPI_BURST = 2.0
WAL_INFLATED_PCT = 20.0
# the other steps a burst is judged against: fewer and there is no "usual" to compare with
MIN_NEIGHBOURS = 2
CLIENT = "client backend"


def wal_of(records: Sequence[ServerRecord]) -> WalStep | None:
    return next((r for r in records if isinstance(r, WalStep)), None)


def checkpoints_of(records: Sequence[ServerRecord]) -> CheckpointStep | None:
    return next((r for r in records if isinstance(r, CheckpointStep)), None)


def io_of(records: Sequence[ServerRecord]) -> list[IoStep]:
    return [r for r in records if isinstance(r, IoStep)]


def _window(step: StepRecord) -> float | None:
    if step.bench_start is None or step.bench_end is None or step.bench_end <= step.bench_start:
        return None
    return step.bench_end - step.bench_start


def _per(x: float, d: float | None) -> float | None:
    """x per transaction or per second; None without a transaction or a measured window."""
    return x / d if d else None


@dataclass(frozen=True)
class StepWal:
    """One step's WAL (its pg_stat_wal record), per transaction and per second."""

    bytes_per_txn: float | None
    records_per_txn: float | None
    fpi_per_txn: float | None
    fpi_pct: float | None  # full-page images, % of WAL records
    mb_s: float | None
    buffers_full: int
    commits_per_sync: float | None  # transactions per WAL sync: group commit when above 1


def step_wal(step: StepRecord, wal: WalStep) -> StepWal:
    txns, seconds = float(step.transactions or 0), _window(step)
    return StepWal(bytes_per_txn=_per(wal.bytes, txns), records_per_txn=_per(float(wal.records), txns),
                   fpi_per_txn=_per(float(wal.fpi), txns), fpi_pct=_per(100.0 * wal.fpi, wal.records),
                   mb_s=_per(wal.bytes / 1e6, seconds), buffers_full=wal.buffers_full,
                   commits_per_sync=_per(txns, wal.syncs))


@dataclass(frozen=True)
class StepIo:
    """One step's pg_stat_io rows (16+), relations: the client backends' reads and who wrote."""

    reads_per_s: float | None
    hit_pct: float | None
    backend_writes_per_s: float | None  # client backends writing out dirty buffers themselves
    checkpointer_writes_per_s: float | None
    bgwriter_writes_per_s: float | None


def step_io(step: StepRecord, io: Sequence[IoStep]) -> StepIo:
    seconds = _window(step)
    rel = [r for r in io if r.object == "relation"]
    client = [r for r in rel if r.backend_type == CLIENT]
    reads, hits = sum(r.reads for r in client), sum(r.hits for r in client)

    def writes_by(kind: str) -> float | None:
        return _per(float(sum(r.writes for r in rel if r.backend_type == kind)), seconds)

    return StepIo(reads_per_s=_per(float(reads), seconds), hit_pct=_per(100.0 * hits, hits + reads),
                  backend_writes_per_s=writes_by(CLIENT), checkpointer_writes_per_s=writes_by("checkpointer"),
                  bgwriter_writes_per_s=writes_by("background writer"))


@dataclass(frozen=True)
class StepServer:
    """One step's server side: each part there when the step recorded it."""

    wal: StepWal | None
    checkpoint: CheckpointStep | None
    io: StepIo | None


def step_server(step: StepRecord, records: Sequence[ServerRecord]) -> StepServer | None:
    wal, ckpt, io = wal_of(records), checkpoints_of(records), io_of(records)
    if wal is None and ckpt is None and not io:
        return None
    return StepServer(step_wal(step, wal) if wal is not None else None, ckpt, step_io(step, io) if io else None)


def _ran(c: CheckpointStep) -> int:
    """Checkpoints performed in the phase: the server's count from 18; before, timed and requested
    ones, a timed one that wrote nothing taken as skipped."""
    if c.done is not None:
        return c.done
    return c.requested + (c.timed if c.buffers_written > 0 else 0)


@dataclass(frozen=True)
class ServerRow:
    """A client count's server side: each figure the median over its completed repetitions."""

    tps: Spread | None
    wal_bytes_per_txn: Spread | None
    wal_records_per_txn: Spread | None
    fpi_per_txn: Spread | None
    fpi_pct: Spread | None
    wal_mb_s: Spread | None
    wal_buffers_full: Spread | None
    commits_per_sync: Spread | None
    checkpoints: int | None  # over all repetitions
    checkpoint_buffers: int | None
    reads_per_s: Spread | None
    hit_pct: Spread | None
    backend_writes_per_s: Spread | None
    checkpointer_writes_per_s: Spread | None
    bgwriter_writes_per_s: Spread | None


def server_side(data: RunData, done: Sequence[StepRecord]) -> ServerRow | None:
    per = [x for s in done if (x := step_server(s, data.server(s.step_id))) is not None]
    if not per:
        return None

    wals = [x.wal for x in per if x.wal is not None]
    ios = [x.io for x in per if x.io is not None]
    ckpts = [x.checkpoint for x in per if x.checkpoint is not None]

    def fig(parts: Sequence[StepWal | StepIo], attr: str) -> Spread | None:
        return Spread.of([float(v) for x in parts if (v := getattr(x, attr)) is not None])

    def total(vals: list[int]) -> int | None:
        return sum(vals) if vals else None

    return ServerRow(tps=Spread.of([s.tps for s in done if s.tps is not None]),
                     wal_bytes_per_txn=fig(wals, "bytes_per_txn"), wal_records_per_txn=fig(wals, "records_per_txn"),
                     fpi_per_txn=fig(wals, "fpi_per_txn"), fpi_pct=fig(wals, "fpi_pct"), wal_mb_s=fig(wals, "mb_s"),
                     wal_buffers_full=fig(wals, "buffers_full"), commits_per_sync=fig(wals, "commits_per_sync"),
                     checkpoints=total([_ran(c) for c in ckpts]),
                     checkpoint_buffers=total([c.buffers_written for c in ckpts]),
                     reads_per_s=fig(ios, "reads_per_s"), hit_pct=fig(ios, "hit_pct"),
                     backend_writes_per_s=fig(ios, "backend_writes_per_s"),
                     checkpointer_writes_per_s=fig(ios, "checkpointer_writes_per_s"),
                     bgwriter_writes_per_s=fig(ios, "bgwriter_writes_per_s"))


def checkpoint_check(data: RunData, step: StepRecord) -> Check:
    """Was this step's bench phase disturbed by a checkpoint? One ended in it or was writing as it
    began or ended (the counters, the checkpointer's wait event), or its full-page images per
    transaction were FPI_BURST times its variant's usual with its WAL per transaction inflated by
    WAL_INFLATED_PCT: the burst of first changes to each page after a checkpoint, which makes
    every transaction write more WAL. The value: the step's WAL per transaction against the
    usual, % (0 when not judged)."""
    records = data.server(step.step_id)
    ckpt, wal = checkpoints_of(records), wal_of(records)
    if ckpt is None and wal is None:
        return Check(CheckId.CHECKPOINT, CheckStatus.NA, "not recorded (a run before pgknee recorded the server's "
                                                         "WAL and checkpoints, or a server that does not show them)")
    why: list[str] = []
    if ckpt is not None:
        ran = _ran(ckpt)
        if ran:
            kinds = "requested" if ckpt.requested and not ckpt.timed else "timed" if not ckpt.requested else \
                "timed and requested"
            why.append(f"{ran} {kinds} {plural(ran, 'checkpoint')} ended during the step "
                       f"({ckpt.buffers_written:,} buffers written in {ckpt.write_ms / 1000:.1f} s, "
                       f"sync {ckpt.sync_ms / 1000:.1f} s)")
        running = [w for w, on in (("began", ckpt.running_at_start), ("ended", ckpt.running_at_end)) if on]
        if running:
            why.append(f"a checkpoint was running as the step {' and '.join(running)}")
    mine = step_wal(step, wal) if wal is not None else None
    burst, d = _fpi_burst(data, step, mine)
    if burst:
        why.append(burst)
    if why:
        return Check(CheckId.CHECKPOINT, CheckStatus.WARN, "; ".join(why) + ": its figures are not the steady "
                     "state's", d, CheckUnit.DEVIATION_PCT)
    said = clause("; {:.2f} full-page images per transaction", mine.fpi_per_txn if mine is not None else None)
    return Check(CheckId.CHECKPOINT, CheckStatus.OK, f"no checkpoint during the step{said}", d,
                 CheckUnit.DEVIATION_PCT)


def _fpi_burst(data: RunData, step: StepRecord, mine: StepWal | None) -> tuple[str | None, float | None]:
    """The step's full-page-image burst against its variant's other completed steps (medians)."""
    if mine is None or mine.fpi_per_txn is None or mine.bytes_per_txn is None:
        return None, None
    others = [x for s in data.steps
              if s.variant == step.variant and s.step_id != step.step_id and s.status == "completed"
              and (w := wal_of(data.server(s.step_id))) is not None
              and (x := step_wal(s, w)).fpi_per_txn is not None
              and x.bytes_per_txn is not None]
    if len(others) < MIN_NEIGHBOURS:
        return None, None
    fpi = statistics.median(x.fpi_per_txn for x in others if x.fpi_per_txn is not None)
    wal_txn = statistics.median(x.bytes_per_txn for x in others if x.bytes_per_txn is not None)
    d = 100.0 * (mine.bytes_per_txn - wal_txn) / wal_txn if wal_txn else 0.0
    if mine.fpi_per_txn > FPI_BURST * fpi and d > WAL_INFLATED_PCT and mine.fpi_per_txn > 0:
        return (f"{mine.fpi_per_txn:.2f} full-page images per transaction against {fpi:.2f} in its variant's other "
                f"steps, {mine.bytes_per_txn:,.0f} bytes of WAL per transaction against {wal_txn:,.0f} "
                f"({d:+.0f}%): the burst after a checkpoint"), d
    return None, d
