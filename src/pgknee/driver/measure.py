"""pgbench's per-transaction log, read and measured: TPS and latency (mean, stddev, p50/p95/p99,
max) overall and per script, failures by kind, retries, and the schedule lag of an open loop.
Latency comes from the log, never from the average pgbench prints (derived from run time x
clients / transactions when no -P, -R or -L is given)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pgknee.types import LatencyStats, ScriptResult, StepMeasurement
from pgknee.workloads.base import Script


def latency_stats(lat_ms: np.ndarray) -> LatencyStats | None:
    """Mean, sample stddev, min, p50/p95/p99 (linear interpolation), max, in ms."""
    n = int(lat_ms.size)
    if n == 0:
        return None
    p50, p95, p99 = np.percentile(lat_ms, [50, 95, 99])
    return LatencyStats(
        count=n, mean_ms=float(lat_ms.mean()), stddev_ms=float(lat_ms.std(ddof=1)) if n > 1 else 0.0,
        min_ms=float(lat_ms.min()), p50_ms=float(p50), p95_ms=float(p95), p99_ms=float(p99),
        max_ms=float(lat_ms.max()))


_FAILURE_WORDS = {"failed": "other", "serialization": "serialization", "deadlock": "deadlock"}


@dataclass
class TransactionLog:
    """Columns of pgbench's per-transaction log(s), as arrays."""

    latency_us: np.ndarray  # int64; -1 where the transaction failed
    script_no: np.ndarray  # int16
    end_epoch: np.ndarray  # float64 seconds
    retries: np.ndarray  # int32
    failures: dict[str, int]
    skipped: int
    lag_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # with --rate


def read_transaction_logs(paths: Iterable[Path], *, has_lag: bool | None = None,
                          has_retries: bool | None = None,
                          opener: Callable[[Path], BinaryIO] | None = None) -> TransactionLog:
    """Parse 'client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]'.

    time is the latency in microseconds (with --rate: from the scheduled start, lag included),
    or failed/serialization/deadlock/skipped. schedule_lag is there with --rate, retries with
    --max-tries other than 1; when the caller does not say, a 7th column is taken for retries.
    `opener` opens a log (pgbench's, written as another user: safefs.open_child_file)."""
    lat: list[int] = []
    lag: list[int] = []
    scr: list[int] = []
    end: list[float] = []
    ret: list[int] = []
    failures: dict[str, int] = {}
    skipped = 0
    for path in paths:
        with (opener(path) if opener is not None else open(path, "rb")) as fh:
            for raw in fh:
                parts = raw.split()
                if len(parts) < 6:
                    continue
                t = parts[2]
                if t.isdigit():
                    lat.append(int(t))
                elif t == b"skipped":
                    skipped += 1
                    continue
                else:
                    kind = _FAILURE_WORDS.get(t.decode(errors="replace"), t.decode(errors="replace"))
                    failures[kind] = failures.get(kind, 0) + 1
                    lat.append(-1)
                scr.append(int(parts[3]))
                end.append(int(parts[4]) + int(parts[5]) / 1e6)
                lag_col = 6 if has_lag else None
                ret_col = (7 if has_lag else 6) if has_retries or (has_retries is None and not has_lag) else None
                if lag_col is not None and len(parts) > lag_col:
                    lag.append(int(parts[lag_col]))
                ret.append(int(parts[ret_col]) if ret_col is not None and len(parts) > ret_col else 0)
    return TransactionLog(np.asarray(lat, dtype=np.int64), np.asarray(scr, dtype=np.int16),
                          np.asarray(end, dtype=np.float64), np.asarray(ret, dtype=np.int32), failures, skipped,
                          np.asarray(lag, dtype=np.int64))


def measure(log: TransactionLog, scripts: Sequence[Script], duration_s: float, *,
            think_us: int = 0) -> StepMeasurement:
    """TPS and latency from the log: successful transactions / duration; latency over successes.
    With think time, the pause pgbench counted in each transaction is taken out (what
    remains of a sleep's overshoot, some microseconds, stays in)."""
    ok = log.latency_us >= 0
    net_us = np.where(ok, np.maximum(log.latency_us - think_us, 0), log.latency_us)
    lat_ms = net_us[ok] / 1000.0
    per_script = []
    for i, s in enumerate(scripts):
        sel = log.script_no == i
        s_ok = sel & ok
        n_ok = int(s_ok.sum())
        per_script.append(ScriptResult(
            script_no=i, name=s.name, weight=s.weight, transactions=n_ok, failed=int((sel & ~ok).sum()),
            retried=int((log.retries[sel] > 0).sum()), tps=n_ok / duration_s,
            latency=latency_stats(net_us[s_ok] / 1000.0)))
    n_ok = int(ok.sum())
    return StepMeasurement(
        transactions=n_ok, failed=int((~ok).sum()), retried=int((log.retries > 0).sum()),
        retries=int(log.retries.sum()), tps=n_ok / duration_s, latency=latency_stats(lat_ms),
        scripts=tuple(per_script), failures=dict(log.failures),
        lag=latency_stats(log.lag_us / 1000.0) if log.lag_us.size else None, skipped=log.skipped)
