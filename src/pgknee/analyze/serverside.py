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
from pgknee.analyze.words import plural
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


@dataclass(frozen=True)
class StepServer:
    """One step's server side, per transaction and per second."""

    wal_bytes_per_txn: float | None
    wal_records_per_txn: float | None
    fpi_per_txn: float | None
    fpi_pct: float | None  # full-page images, % of WAL records
    wal_mb_s: float | None
    wal_buffers_full: int | None
    commits_per_sync: float | None  # transactions per WAL sync: group commit when above 1
    checkpoints: int | None  # ended in the bench phase
    checkpoint_buffers: int | None
    reads_per_s: float | None  # client backends, relations (pg_stat_io, 16+)
    hit_pct: float | None
    backend_writes_per_s: float | None  # client backends writing out dirty buffers themselves
    checkpointer_writes_per_s: float | None
    bgwriter_writes_per_s: float | None


def step_server(step: StepRecord, records: Sequence[ServerRecord]) -> StepServer | None:
    wal, ckpt, io = wal_of(records), checkpoints_of(records), io_of(records)
    seconds = _window(step)
    if wal is None and ckpt is None and not io:
        return None
    txns = step.transactions or 0

    def per_txn(x: float | None) -> float | None:
        return x / txns if x is not None and txns else None

    def per_s(x: float | None) -> float | None:
        return x / seconds if x is not None and seconds else None

    rel = [r for r in io if r.object == "relation"]
    client = [r for r in rel if r.backend_type == CLIENT]
    reads, hits = sum(r.reads for r in client), sum(r.hits for r in client)

    def writes_by(kind: str) -> float | None:
        return per_s(float(sum(r.writes for r in rel if r.backend_type == kind))) if io else None

    return StepServer(
        wal_bytes_per_txn=per_txn(wal.bytes) if wal else None,
        wal_records_per_txn=per_txn(float(wal.records)) if wal else None,
        fpi_per_txn=per_txn(float(wal.fpi)) if wal else None,
        fpi_pct=100.0 * wal.fpi / wal.records if wal and wal.records else None,
        wal_mb_s=per_s(wal.bytes / 1e6) if wal else None,
        wal_buffers_full=wal.buffers_full if wal else None,
        commits_per_sync=txns / wal.syncs if wal and wal.syncs else None,
        checkpoints=_ran(ckpt) if ckpt else None, checkpoint_buffers=ckpt.buffers_written if ckpt else None,
        reads_per_s=per_s(float(reads)) if io else None,
        hit_pct=100.0 * hits / (hits + reads) if io and hits + reads else None,
        backend_writes_per_s=writes_by(CLIENT), checkpointer_writes_per_s=writes_by("checkpointer"),
        bgwriter_writes_per_s=writes_by("background writer"))


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

    def fig(attr: str) -> Spread | None:
        return Spread.of([float(v) for x in per if (v := getattr(x, attr)) is not None])

    def total(attr: str) -> int | None:
        vals = [int(v) for x in per if (v := getattr(x, attr)) is not None]
        return sum(vals) if vals else None

    return ServerRow(tps=Spread.of([s.tps for s in done if s.tps is not None]),
                     wal_bytes_per_txn=fig("wal_bytes_per_txn"), wal_records_per_txn=fig("wal_records_per_txn"),
                     fpi_per_txn=fig("fpi_per_txn"), fpi_pct=fig("fpi_pct"), wal_mb_s=fig("wal_mb_s"),
                     wal_buffers_full=fig("wal_buffers_full"), commits_per_sync=fig("commits_per_sync"),
                     checkpoints=total("checkpoints"), checkpoint_buffers=total("checkpoint_buffers"),
                     reads_per_s=fig("reads_per_s"), hit_pct=fig("hit_pct"),
                     backend_writes_per_s=fig("backend_writes_per_s"),
                     checkpointer_writes_per_s=fig("checkpointer_writes_per_s"),
                     bgwriter_writes_per_s=fig("bgwriter_writes_per_s"))


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
    burst, d = _fpi_burst(data, step, wal)
    if burst:
        why.append(burst)
    if why:
        return Check(CheckId.CHECKPOINT, CheckStatus.WARN, "; ".join(why) + ": its figures are not the steady "
                     "state's", d, CheckUnit.DEVIATION_PCT)
    fpi = step_server(step, records)
    said = f"; {fpi.fpi_per_txn:.2f} full-page images per transaction" if fpi and fpi.fpi_per_txn is not None else ""
    return Check(CheckId.CHECKPOINT, CheckStatus.OK, f"no checkpoint during the step{said}", d,
                 CheckUnit.DEVIATION_PCT)


def _fpi_burst(data: RunData, step: StepRecord, wal: WalStep | None) -> tuple[str | None, float | None]:
    """The step's full-page-image burst against its variant's other completed steps (medians)."""
    mine = step_server(step, (wal,)) if wal is not None else None
    if mine is None or mine.fpi_per_txn is None or mine.wal_bytes_per_txn is None:
        return None, None
    others = [x for s in data.steps
              if s.variant == step.variant and s.step_id != step.step_id and s.status == "completed"
              and (w := wal_of(data.server(s.step_id))) is not None
              and (x := step_server(s, (w,))) is not None and x.fpi_per_txn is not None
              and x.wal_bytes_per_txn is not None]
    if len(others) < MIN_NEIGHBOURS:
        return None, None
    fpi = statistics.median(x.fpi_per_txn for x in others if x.fpi_per_txn is not None)
    wal_txn = statistics.median(x.wal_bytes_per_txn for x in others if x.wal_bytes_per_txn is not None)
    d = 100.0 * (mine.wal_bytes_per_txn - wal_txn) / wal_txn if wal_txn else 0.0
    if mine.fpi_per_txn > FPI_BURST * fpi and d > WAL_INFLATED_PCT and mine.fpi_per_txn > 0:
        return (f"{mine.fpi_per_txn:.2f} full-page images per transaction against {fpi:.2f} in its variant's other "
                f"steps, {mine.wal_bytes_per_txn:,.0f} bytes of WAL per transaction against {wal_txn:,.0f} "
                f"({d:+.0f}%): the burst after a checkpoint"), d
    return None, d
