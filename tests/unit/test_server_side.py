"""The server's side of a step (analyze.serverside): WAL per transaction, checkpoints, pg_stat_io,
and the checkpoint check on constructed steps; the records' round trip through their rows."""

from __future__ import annotations

from typing import Any

import builders
import pytest

from pgknee.analyze.groups import step_checks
from pgknee.analyze.serverside import FPI_BURST, checkpoint_check, server_side, step_server
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.server import BY_TABLE, CheckpointStep, IoStep, WalStep, as_row, from_row


def wal(records: int = 10_000, fpi: int = 10, nbytes: float = 800_000.0, syncs: int | None = 500) -> WalStep:
    return WalStep(records=records, fpi=fpi, bytes=nbytes, buffers_full=0, writes=syncs, syncs=syncs,
                   write_ms=None if syncs is None else 5.0, sync_ms=None if syncs is None else 50.0)


def ckpt(**kw: Any) -> CheckpointStep:
    base: dict[str, Any] = dict(source="pg_stat_bgwriter", timed=0, requested=0, done=None, buffers_written=0,
                                write_ms=0.0, sync_ms=0.0, running_at_start=False, running_at_end=False)
    base.update(kw)
    return CheckpointStep(**base)


def io(backend: str, reads: int = 0, hits: int = 0, writes: int = 0, obj: str = "relation") -> IoStep:
    return IoStep(backend_type=backend, object=obj, context="normal", reads=reads, read_ms=0.0, writes=writes,
                  write_ms=0.0, writebacks=0, extends=0, hits=hits, evictions=0, reuses=0, fsyncs=0, fsync_ms=0.0,
                  read_bytes=reads * 8192.0, write_bytes=writes * 8192.0)


def test_per_transaction_and_per_second() -> None:
    s = builders.step(transactions=1000, bench_start=1000.0, bench_end=1010.0)  # 10 s
    x = step_server(s, (wal(records=10_000, fpi=50, nbytes=800_000.0, syncs=400),
                        io("client backend", reads=100, hits=9_900, writes=20), io("checkpointer", writes=300),
                        io("client backend", reads=999, obj="wal")))
    assert x is not None and x.wal is not None and x.io is not None
    w, i = x.wal, x.io
    assert (w.bytes_per_txn, w.records_per_txn, w.fpi_per_txn) == (800.0, 10.0, 0.05)
    assert w.fpi_pct == pytest.approx(0.5) and w.mb_s == pytest.approx(0.08)
    assert w.commits_per_sync == 2.5  # group commit: 1,000 transactions, 400 syncs
    assert i.reads_per_s == 10.0 and i.hit_pct == 99.0  # relations only: the WAL row is not a buffer read
    assert (i.backend_writes_per_s, i.checkpointer_writes_per_s, i.bgwriter_writes_per_s) == (2.0, 30.0, 0.0)
    assert x.checkpoint is None and step_server(s, ()) is None


def _run(records: dict[int, tuple[Any, ...]], n: int = 4, fpi_txn: float | None = None) -> Any:
    steps = [builders.step(step_id=i, seq=i, clients=2 * i, transactions=1000) for i in range(1, n + 1)]
    return builders.make_run_data(steps=steps, server=records, scripts={}, failures={}, pgdb={}, os={}, waits={},
                                  waits_bg={}, snaps={})


def _check(data: Any, step_id: int) -> tuple[CheckStatus, str]:
    c = checkpoint_check(data, next(s for s in data.steps if s.step_id == step_id))
    assert c.id is CheckId.CHECKPOINT
    return c.status, c.detail


def test_a_checkpoint_that_ended_in_the_step_is_flagged_on_it_only() -> None:
    quiet = (wal(), ckpt())
    data = _run({1: quiet, 2: (wal(fpi=900, nbytes=5_000_000.0), ckpt(requested=1, buffers_written=1234,
                                                                       write_ms=800.0, sync_ms=20.0)),
                 3: quiet, 4: quiet})
    assert _check(data, 1)[0] is CheckStatus.OK and _check(data, 3)[0] is CheckStatus.OK
    status, detail = _check(data, 2)
    assert status is CheckStatus.WARN
    assert "1 requested checkpoint ended during the step (1,234 buffers written in 0.8 s, sync 0.0 s)" in detail
    assert "0.90 full-page images per transaction against 0.01" in detail  # its burst too


def test_the_burst_after_a_checkpoint_between_steps_is_flagged_where_it_lands() -> None:
    """A checkpoint in the pause between steps: no counter moves in either, but the next step's
    first changes to each page write full-page images, and its WAL per transaction grows."""
    quiet = (wal(fpi=10, nbytes=800_000.0), ckpt())
    burst = (wal(fpi=600, nbytes=3_000_000.0), ckpt())
    data = _run({1: quiet, 2: quiet, 3: burst, 4: quiet})
    status, detail = _check(data, 3)
    assert status is CheckStatus.WARN and "the burst after a checkpoint" in detail and "(+275%)" in detail
    assert [_check(data, i)[0] for i in (1, 2, 4)] == [CheckStatus.OK] * 3


@pytest.mark.parametrize(("fpi", "nbytes", "flagged"), [
    (10 * FPI_BURST + 1, 1_000_000.0, True),   # twice the images and 25% more WAL
    (10 * FPI_BURST + 1, 900_000.0, False),    # twice the images, WAL barely grew: not a cost
    (19, 2_000_000.0, False),                  # WAL grew, images did not double: not this cause
])
def test_the_burst_needs_both_more_images_and_more_wal(fpi: float, nbytes: float, flagged: bool) -> None:
    quiet = (wal(fpi=10, nbytes=800_000.0), ckpt())
    data = _run({1: quiet, 2: quiet, 3: (wal(fpi=int(fpi), nbytes=nbytes), ckpt())})
    assert (_check(data, 3)[0] is CheckStatus.WARN) is flagged


def test_no_burst_judged_without_enough_neighbours() -> None:
    data = _run({1: (wal(fpi=10),), 2: (wal(fpi=900, nbytes=9e6),)}, n=2)
    assert _check(data, 2)[0] is CheckStatus.OK


def test_a_running_checkpoint_and_skipped_timed_ones() -> None:
    data = _run({1: (wal(), ckpt(running_at_start=True)), 2: (wal(), ckpt(timed=1)),  # skipped: wrote nothing
                 3: (wal(), ckpt(timed=1, done=0, source="pg_stat_checkpointer")),  # 18 says: none done
                 4: (wal(), ckpt(timed=1, buffers_written=10, running_at_end=True))})
    assert _check(data, 1) == (CheckStatus.WARN, "a checkpoint was running as the step began: its figures are "
                                                 "not the steady state's")
    assert _check(data, 2)[0] is CheckStatus.OK and _check(data, 3)[0] is CheckStatus.OK
    status, detail = _check(data, 4)
    assert status is CheckStatus.WARN and detail.startswith("1 timed checkpoint ended during the step")
    assert "a checkpoint was running as the step ended" in detail


def test_the_check_only_where_recorded_and_the_rows_over_repetitions() -> None:
    data = _run({1: (wal(nbytes=700_000.0), ckpt(requested=1, buffers_written=5)),
                 2: (wal(nbytes=900_000.0), ckpt(requested=1, buffers_written=7))}, n=3)
    assert CheckId.CHECKPOINT not in [c.id for c in step_checks(data, data.steps[2])]  # step 3: no records
    assert CheckId.CHECKPOINT in [c.id for c in step_checks(data, data.steps[0])]
    row = server_side(data, data.steps[:2])
    assert row is not None and row.wal_bytes_per_txn is not None
    assert (row.wal_bytes_per_txn.value, row.wal_bytes_per_txn.lo, row.wal_bytes_per_txn.hi) == (800.0, 700.0, 900.0)
    assert (row.checkpoints, row.checkpoint_buffers) == (2, 12)
    assert server_side(data, data.steps[2:]) is None


@pytest.mark.parametrize("record", [wal(), wal(syncs=None), ckpt(requested=2, done=1, running_at_end=True),
                                    io("checkpointer", writes=3)])
def test_a_record_survives_its_row(record: Any) -> None:
    row = as_row(record)
    assert all(not isinstance(v, bool) for v in row.values())  # stored as 0 and 1
    assert from_row(BY_TABLE[record.TABLE], row) == record
