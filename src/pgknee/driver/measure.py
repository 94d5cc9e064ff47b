"""pgbench's per-transaction log, read and measured: TPS and latency (mean, stddev, p50/p95/p99,
max) overall and per script, failures by kind, retries, and the schedule lag of an open loop.
Latency comes from the log, never from the average pgbench prints (derived from run time x
clients / transactions when no -P, -R or -L is given).

The logs are streamed a few MB at a time, parsed with numpy (not line by line) and folded into
per-script latency histograms and counters (driver.histogram): memory stays constant whatever the
run's length (2,000 clients for 10 minutes write some 12 million lines), mean, stddev, min and max
stay exact, and percentiles are within histogram.RELATIVE_ERROR (0.39 %) of the exact ones."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from pgknee.driver.histogram import Histogram
from pgknee.driver.pgbench import Counts
from pgknee.model.results import LatencyStats, ScriptResult, StepMeasurement

if TYPE_CHECKING:
    from pgknee.workloads.base import Script

CHUNK_BYTES = 1 << 20  # read this much at a time: some 30,000 lines, about 15 MB of work space
MAX_LINE = 1 << 16  # a longer "line" is not pgbench's: skipped, so a file without newlines stays cheap
MAX_SCRIPTS = 128  # pgbench's limit; a line naming another script number counts in the totals only
MAX_NUMBER = 18  # digits: a longer token is not a number pgbench writes (the line is skipped)
OTHER_SCRIPT = -1
_FAILURE_WORDS = {"failed": "other", "serialization": "serialization", "deadlock": "deadlock"}
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.split() splits on


@dataclass
class ScriptTally:
    """One script's transactions: latency of the successes (think time taken out), in µs."""

    latency: Histogram = field(default_factory=Histogram)
    failed: int = 0
    retried: int = 0  # transactions retried at least once, failed in the end or not
    retries: int = 0


@dataclass
class LogSummary:
    """pgbench's per-transaction log(s), folded: per script number (OTHER_SCRIPT for numbers out
    of pgbench's range), failures by kind, skipped transactions, schedule lag (µs, with --rate)."""

    think_us: int = 0  # taken out of every latency while reading
    scripts: dict[int, ScriptTally] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    lag: Histogram = field(default_factory=Histogram)


@dataclass(frozen=True)
class _Layout:
    lag_col: int | None
    ret_col: int | None


@dataclass
class _Lines:
    """The usable lines of one chunk, skipped ones left out: latency -1 where a transaction failed."""

    script: np.ndarray
    latency: np.ndarray
    retries: np.ndarray
    lag: np.ndarray
    failures: dict[str, int]
    skipped: int


def _open_log(path: Path) -> BinaryIO:
    return open(path, "rb")


def read_transaction_logs(paths: Iterable[Path], *, has_lag: bool | None = None,
                          has_retries: bool | None = None,
                          opener: Callable[[Path], BinaryIO] = _open_log, think_us: int = 0,
                          chunk_bytes: int = CHUNK_BYTES) -> LogSummary:
    """Parse 'client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]'.

    time is the latency in microseconds (with --rate: from the scheduled start, lag included),
    or failed/serialization/deadlock/skipped. schedule_lag is there with --rate, retries with
    --max-tries other than 1; when the caller does not say, a 7th column is taken for retries.
    `think_us`, the pause pgknee adds to each transaction, comes out of every latency (at least 0).
    Lines of fewer than 6 fields, or whose numbers are not numbers, are ignored.
    `opener` opens a log (pgbench's, written as another user: safefs.open_child_file)."""
    lag_col = 6 if has_lag else None
    ret_col = (7 if has_lag else 6) if has_retries or (has_retries is None and not has_lag) else None
    layout, paths = _Layout(lag_col, ret_col), list(paths)
    summary = LogSummary(think_us=think_us)
    for path in paths:
        with opener(path) as fh:
            for block in _blocks(fh, chunk_bytes):
                _fold(summary, _parse(block, layout))
    return summary


def _blocks(fh: BinaryIO, size: int) -> Iterator[bytes]:
    """Whole lines, about `size` bytes at a time; the last line even without its newline."""
    rest, skipping = b"", False
    while data := fh.read(size):
        if skipping:  # inside a line too long to be pgbench's: drop it up to its end
            nl = data.find(b"\n")
            if nl < 0:
                continue
            data, skipping = data[nl + 1:], False
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        rest = data[cut:]
        if len(rest) > MAX_LINE:
            rest, skipping = b"", True
    if rest and not skipping:
        yield rest + b"\n"


def _tokens(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where each token starts and ends (exclusive); each line's first token and number of tokens."""
    t = ~_WHITESPACE[a]
    starts = np.flatnonzero(t & ~np.concatenate(([False], t[:-1])))
    ends = np.flatnonzero(t & ~np.concatenate((t[1:], [False]))) + 1
    newlines = np.flatnonzero(a == 10)
    line_starts = np.concatenate(([0], newlines[:-1] + 1))
    first = np.searchsorted(starts, line_starts)
    return starts, ends, first, np.searchsorted(starts, newlines) - first


def _numbers(a: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens a[s:e] as integers, and whether each is one (1 to MAX_NUMBER digits)."""
    length = e - s
    ok = (length >= 1) & (length <= MAX_NUMBER)
    value = np.zeros(s.size, dtype=np.int64)
    for back in range(min(int(length.max(initial=0)), MAX_NUMBER), 0, -1):
        pos = e - back
        inside = pos >= s
        digit = a[np.maximum(pos, 0)].astype(np.int64) - 48
        ok &= ~inside | ((digit >= 0) & (digit <= 9))
        value = np.where(inside, value * 10 + digit, value)
    return value, ok


def _words(a: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Tokens of at most MAX_NUMBER bytes as fixed-width byte strings."""
    pos = s[:, None] + np.arange(MAX_NUMBER)
    inside = pos < e[:, None]
    grid = np.where(inside, a[np.minimum(pos, a.size - 1)], 0).astype(np.uint8)
    return np.ascontiguousarray(grid).view(f"S{MAX_NUMBER}").ravel()


def _column(a: np.ndarray, tok: tuple[np.ndarray, np.ndarray], idx: np.ndarray,
            present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A numeric column: its values (0 where absent) and whether each line's is usable."""
    starts, ends = tok
    i = np.where(present, idx, 0)
    value, ok = _numbers(a, starts[i], ends[i])
    return np.where(present, value, 0), ok | ~present


def _parse(block: bytes, layout: _Layout) -> _Lines:
    """The lines of a block that ends with a newline, vectorised."""
    a = np.frombuffer(block, dtype=np.uint8)
    starts, ends, first, nfields = _tokens(a)
    rows = np.flatnonzero(nfields >= 6)
    first, nfields = first[rows], nfields[rows]
    tok = (starts, ends)
    t_start, t_end = starts[first + 2], ends[first + 2]
    latency, is_number = _numbers(a, t_start, t_end)
    script, usable = _column(a, tok, first + 3, nfields > 3)
    usable &= (t_end - t_start) <= MAX_NUMBER
    lag = np.zeros(rows.size, dtype=np.int64)
    has_lag = np.zeros(rows.size, dtype=bool)
    if layout.lag_col is not None:
        has_lag = nfields > layout.lag_col
        lag, lag_ok = _column(a, tok, first + layout.lag_col, has_lag)
        usable &= lag_ok
    retries = np.zeros(rows.size, dtype=np.int64)
    if layout.ret_col is not None:
        retries, ret_ok = _column(a, tok, first + layout.ret_col, nfields > layout.ret_col)
        usable &= ret_ok
    worded = np.flatnonzero(usable & ~is_number)
    words = _words(a, t_start[worded], t_end[worded])
    failures = _kinds(words)
    skipped = failures.pop("skipped", 0)
    keep = usable.copy()
    keep[worded[words == b"skipped"]] = False
    return _Lines(script[keep], np.where(is_number, latency, -1)[keep], retries[keep],
                  lag[keep & has_lag], failures, skipped)


def _kinds(words: np.ndarray) -> dict[str, int]:
    """Failures by kind ('failed' is 'other'; a word pgbench does not write is its own kind)."""
    out: dict[str, int] = {}
    for word, n in zip(*np.unique(words, return_counts=True), strict=True):
        kind = bytes(word).decode(errors="replace")
        kind = _FAILURE_WORDS.get(kind, kind)
        out[kind] = out.get(kind, 0) + int(n)
    return out


def _fold(summary: LogSummary, lines: _Lines) -> None:
    summary.skipped += lines.skipped
    for kind, n in lines.failures.items():
        summary.failures[kind] = summary.failures.get(kind, 0) + n
    summary.lag.record(lines.lag)
    keys = np.where((lines.script >= 0) & (lines.script < MAX_SCRIPTS), lines.script, OTHER_SCRIPT)
    for key in np.unique(keys).tolist():
        sel = keys == key
        tally = summary.scripts.setdefault(key, ScriptTally())
        lat, retries = lines.latency[sel], lines.retries[sel]
        ok = lat >= 0
        tally.latency.record(np.maximum(lat[ok] - summary.think_us, 0))
        tally.failed += int(ok.size - ok.sum())
        tally.retried += int((retries > 0).sum())
        tally.retries += int(retries.sum())


def latency_stats(h: Histogram, scale: float = 1e-3) -> LatencyStats | None:
    """Mean, sample stddev, min and max (exact), p50/p95/p99 (numpy's linear interpolation, read
    from the histogram), max; microseconds in, milliseconds out."""
    if h.count == 0:
        return None
    p50, p95, p99 = h.percentiles([50, 95, 99])
    return LatencyStats(count=h.count, mean_ms=h.mean * scale, stddev_ms=h.stddev * scale,
                        min_ms=h.min * scale, p50_ms=p50 * scale, p95_ms=p95 * scale, p99_ms=p99 * scale,
                        max_ms=h.max * scale)


def measure(log: LogSummary, scripts: Sequence[Script], duration_s: float, *, rate: float = 1.0,
            counts: Counts | None = None) -> StepMeasurement:
    """TPS and latency from the log: successful transactions / duration; latency over successes.
    With think time, the pause pgbench counted in each transaction was taken out while reading
    (read_transaction_logs(think_us=...): a histogram cannot be shifted afterwards without losing
    its precision; what remains of a sleep's overshoot, some microseconds, stays in).
    When pgbench logged only a share of the transactions (--sampling-rate `rate` < 1), the counts
    come from its summary (`counts`), exact, and the latency from the logged share; without a
    summary (pgbench killed) the logged counts are scaled up by 1 / rate."""
    total, per_script = ScriptTally(), []
    for tally in log.scripts.values():
        total.latency.merge(tally.latency)
        total.failed, total.retried, total.retries = (total.failed + tally.failed, total.retried + tally.retried,
                                                      total.retries + tally.retries)
    exact = _exact(log, total, len(scripts), rate, counts)
    for i, s in enumerate(scripts):
        t = log.scripts.get(i, ScriptTally())
        tx, failed, retried = exact.script(i, t)
        per_script.append(ScriptResult(
            script_no=i, name=s.name, weight=s.weight, transactions=tx, failed=failed,
            retried=retried, tps=tx / duration_s, latency=latency_stats(t.latency)))
    return StepMeasurement(
        transactions=exact.total.transactions, failed=exact.total.failed, retried=exact.total.retried,
        retries=exact.total.retries, tps=exact.total.transactions / duration_s, latency=latency_stats(total.latency),
        scripts=tuple(per_script), failures=exact.failures, lag=latency_stats(log.lag), skipped=exact.total.skipped)


@dataclass(frozen=True)
class _Exact:
    total: Counts
    failures: dict[str, int]
    per_script: tuple[Counts, ...] | None  # None: from the log (scaled by `scale`)
    scale: float

    def script(self, i: int, t: ScriptTally) -> tuple[int, int, int]:
        if self.per_script is not None and i < len(self.per_script):
            c = self.per_script[i]
            return c.transactions, c.failed, c.retried
        return (round(t.latency.count * self.scale), round(t.failed * self.scale), round(t.retried * self.scale))


def _exact(log: LogSummary, total: ScriptTally, n_scripts: int, rate: float, counts: Counts | None) -> _Exact:
    """The step's counts: the log's when it holds every transaction, else pgbench's summary's,
    else the log's scaled up."""
    if rate >= 1 or counts is None:
        k = 1.0 if rate >= 1 else 1.0 / rate
        c = Counts(round(total.latency.count * k), round(total.failed * k), retried=round(total.retried * k),
                   retries=round(total.retries * k), skipped=round(log.skipped * k))
        return _Exact(c, {kind: round(n * k) for kind, n in log.failures.items()}, None, k)
    kinds = {"serialization": counts.serialization, "deadlock": counts.deadlock,
             "other": counts.failed - counts.serialization - counts.deadlock}
    per_script = counts.scripts if counts.scripts else ((counts,) if n_scripts == 1 else None)
    return _Exact(counts, {k: n for k, n in kinds.items() if n > 0}, per_script, 1.0 / rate)
