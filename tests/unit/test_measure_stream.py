"""pgbench's transaction logs read in chunks (driver.measure): the same figures wherever a chunk
ends, counters exact, percentiles within the histogram's bound of the exact ones."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest
from builders import DATA

from pgknee.driver import measure as m
from pgknee.driver.histogram import RELATIVE_ERROR
from pgknee.model.results import LatencyStats
from pgknee.workloads.base import Script

LOGS = [DATA / "pgbench_log" / "log.4242", DATA / "pgbench_log" / "log.4242.1"]
SCRIPTS = (Script("a", Path("a.sql"), 60), Script("b", Path("b.sql"), 25), Script("c", Path("c.sql"), 15))


def _write_log(path: Path, n: int, seed: int, *, lag: bool = False) -> dict[str, np.ndarray]:
    """A log of n transactions in pgbench's format (with the retries column, and the lag column
    before it if `lag`); returns what was written."""
    rng = np.random.default_rng(seed)
    script = rng.choice(3, n, p=[0.6, 0.25, 0.15])
    lat = np.round(rng.lognormal(np.log([900, 4_000, 30_000])[script], 0.8)).astype(np.int64)
    lat[rng.random(n) < 0.01] *= 500  # a slow tail, to seconds
    fate = rng.choice(4, n, p=[0.95, 0.03, 0.01, 0.01])  # ok, serialization, deadlock, skipped
    retries = np.where(fate == 1, 2, rng.choice(3, n, p=[0.9, 0.08, 0.02]))
    lag_us = rng.integers(0, 5_000, n)
    words = np.array(["", "serialization", "deadlock", "skipped"])
    with open(path, "w") as fh:
        for i in range(n):
            t = str(lat[i]) if fate[i] == 0 else words[fate[i]]
            extra = f" {lag_us[i]}" if lag else ""
            fh.write(f"{i % 50} {i // 50} {t} {script[i]} {1_700_000_000 + i // 1000} {i % 1000 * 997}{extra} "
                     f"{retries[i]}\n")
    return {"script": script, "lat": lat, "fate": fate, "retries": retries, "lag": lag_us}


def _close(stats: LatencyStats | None, values: np.ndarray) -> None:
    """Exact count, mean, stddev, min and max; percentiles within the bound of numpy's."""
    assert stats is not None
    ms = values / 1000.0
    assert stats.count == values.size
    assert stats.mean_ms == pytest.approx(ms.mean(), rel=1e-12)
    assert stats.stddev_ms == pytest.approx(ms.std(ddof=1), rel=1e-9)
    assert (stats.min_ms, stats.max_ms) == (ms.min(), ms.max())
    exact = np.percentile(ms, [50, 95, 99])
    got = np.array([stats.p50_ms, stats.p95_ms, stats.p99_ms])
    assert (np.abs(got - exact) <= RELATIVE_ERROR * exact).all(), (got, exact)


def test_a_large_log_against_the_exact_figures(tmp_path: Path) -> None:
    w = _write_log(tmp_path / "log.1", 30_000, seed=1)
    meas = m.measure(m.read_transaction_logs([tmp_path / "log.1"], chunk_bytes=4099), SCRIPTS, 10.0)
    ok, kept = w["fate"] == 0, w["fate"] != 3
    assert (meas.transactions, meas.failed, meas.skipped) == (ok.sum(), (kept & ~ok).sum(), (w["fate"] == 3).sum())
    assert meas.retries == w["retries"][kept].sum() and meas.retried == (w["retries"][kept] > 0).sum()
    assert meas.failures == {"serialization": (w["fate"] == 1).sum(), "deadlock": (w["fate"] == 2).sum()}
    assert meas.tps == ok.sum() / 10.0
    _close(meas.latency, w["lat"][ok])
    for i, s in enumerate(meas.scripts):
        _close(s.latency, w["lat"][ok & (w["script"] == i)])
        assert s.failed == (kept & ~ok & (w["script"] == i)).sum()
    assert meas.lag is None


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 13, 29, 31, 64, 100, 4096])
def test_chunk_boundaries_falling_mid_line_change_nothing(chunk: int) -> None:
    whole = m.measure(m.read_transaction_logs(LOGS), SCRIPTS, 2.0)
    assert m.measure(m.read_transaction_logs(LOGS, chunk_bytes=chunk), SCRIPTS, 2.0) == whole


def test_a_larger_log_in_small_chunks_is_the_same(tmp_path: Path) -> None:
    _write_log(tmp_path / "log.1", 3_000, seed=2, lag=True)
    read: Callable[[int], m.LogSummary] = lambda c: m.read_transaction_logs(  # noqa: E731
        [tmp_path / "log.1"], has_lag=True, has_retries=True, chunk_bytes=c)
    whole = m.measure(read(1 << 20), SCRIPTS, 1.0)
    for chunk in (37, 1000, 65_537):
        assert m.measure(read(chunk), SCRIPTS, 1.0) == whole


def test_lag_and_retries_columns(tmp_path: Path) -> None:
    w = _write_log(tmp_path / "log.1", 5_000, seed=3, lag=True)
    meas = m.measure(m.read_transaction_logs([tmp_path / "log.1"], has_lag=True, has_retries=True,
                                             chunk_bytes=777), SCRIPTS, 5.0)
    kept = w["fate"] != 3
    _close(meas.lag, w["lag"][kept])  # lag of every transaction not skipped, failed or not
    assert meas.retries == w["retries"][kept].sum()
    _close(meas.latency, w["lat"][w["fate"] == 0])
    # told there is no retries column, the 8th is ignored; the lag is still the 7th
    no_retries = m.measure(m.read_transaction_logs([tmp_path / "log.1"], has_lag=True, has_retries=False),
                           SCRIPTS, 5.0)
    assert (no_retries.retries, no_retries.retried) == (0, 0) and no_retries.lag == meas.lag


def test_a_failed_only_log(tmp_path: Path) -> None:
    (tmp_path / "log.1").write_text("".join(f"{i} 0 {('failed', 'deadlock')[i % 2]} 1 1700000000 5 1\n"
                                            for i in range(11)))
    meas = m.measure(m.read_transaction_logs([tmp_path / "log.1"]), SCRIPTS, 1.0)
    assert (meas.transactions, meas.failed, meas.retried, meas.retries, meas.tps) == (0, 11, 11, 11, 0.0)
    assert meas.latency is None and all(s.latency is None for s in meas.scripts)
    assert meas.failures == {"other": 6, "deadlock": 5} and meas.scripts[1].failed == 11


def test_think_time_comes_out_and_never_below_zero(tmp_path: Path) -> None:
    (tmp_path / "log.1").write_text("0 0 10500 0 1 0\n0 1 9990 0 1 0\n0 2 20000 0 1 0\n")
    s = m.read_transaction_logs([tmp_path / "log.1"], think_us=10_000)
    h = s.scripts[0].latency
    assert (h.count, h.min, h.max, h.total) == (3, 0, 10_000, 10_500)  # 500, 0 (not -10), 10000


def test_what_is_not_a_pgbench_line_is_ignored(tmp_path: Path) -> None:
    long_line = b"9 9 " + b"7" * (m.MAX_LINE + 10)  # no newline for longer than a line can be
    (tmp_path / "log.1").write_bytes(
        b"0 0 1000 0 1700000000 1 0\n"
        b"0 1 12x4 0 1700000000 1 0\n"  # a latency that is not a number: a failure of kind '12x4'
        b"1 1 other 0 1700000000 1 0\n1 2 failed 0 1700000000 1 0\n"  # both of kind 'other'
        b"0 2 2000 x 1700000000 1 0\n"  # a script that is not a number: ignored
        b"0 3 3000 0 1700000000 1 -1\n"  # retries that are not a number: ignored
        b"0 4 1234567890123456789 0 1700000000 1 0\n"  # 19 digits: not a latency pgbench writes
        b"0 5 4000 200 1700000000 1 0\n"  # a script number beyond pgbench's 128: in the totals only
        b"\t0  6\t5000 0 1700000000 1 0 \r\n"  # other whitespace, as str.split() takes it
        + long_line + b"\n"
        b"0 7 6000 1 1700000000 1 3\n"
        b"0 8 7000 1 1700")  # cut short
    s = m.read_transaction_logs([tmp_path / "log.1"], chunk_bytes=1000)
    assert s.failures == {"12x4": 1, "other": 2}
    assert sorted(s.scripts) == [m.OTHER_SCRIPT, 0, 1]
    assert [(k, t.latency.count, t.latency.total, t.failed, t.retries) for k, t in sorted(s.scripts.items())] == [
        (m.OTHER_SCRIPT, 1, 4000, 0, 0), (0, 2, 6000, 3, 0), (1, 1, 6000, 0, 3)]
    meas = m.measure(s, SCRIPTS, 1.0)
    assert (meas.transactions, meas.failed) == (4, 3) and sum(x.transactions for x in meas.scripts) == 3


def test_blocks_are_whole_lines_and_keep_every_byte() -> None:
    data = b"".join(b"%d %d 1000 0 1 2\n" % (i, i * 37) for i in range(500)) + b"last line"
    for size in (1, 5, 64, 1000, 100_000):
        blocks = list(m._blocks(io.BytesIO(data), size))
        assert all(b.endswith(b"\n") and b.count(b"\n") >= 1 for b in blocks)
        assert b"".join(blocks) == data + b"\n"


def test_the_opener_opens_each_log(tmp_path: Path) -> None:
    opened: list[Path] = []

    def opener(p: Path) -> BinaryIO:
        opened.append(p)
        return open(p, "rb")

    assert m.read_transaction_logs(LOGS, opener=opener).skipped == 1 and opened == LOGS
