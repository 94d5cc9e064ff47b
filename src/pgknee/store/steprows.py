"""A step's result as the rows of `steps` and `step_scripts` (store/writer.py writes them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pgknee.model.facts import AutoDuration, Measured
from pgknee.model.results import LatencyStats, StepMeasurement, StepResult

LATENCY = ("stddev", "min", "p50", "p95", "p99", "max")
COUNTS = ("transactions", "failed", "retried", "retries", "tps")


def _latency(prefix: str, lat: LatencyStats | None, fields: Sequence[str]) -> dict[str, float | None]:
    """Its columns `PREFIX_avg_ms` and `PREFIX_FIELD_ms`, all NULL without a latency."""
    names = [f"{prefix}_avg_ms", *(f"{prefix}_{f}_ms" for f in fields)]
    if lat is None:
        return dict.fromkeys(names)
    return dict(zip(names, [lat.mean_ms, *(getattr(lat, f"{f}_ms") for f in fields)], strict=True))


def _measured(m: StepMeasurement | None) -> dict[str, Any]:
    """The measurement's columns, all NULL for a step that measured nothing."""
    if m is None:
        return dict.fromkeys(COUNTS) | _latency("lat", None, LATENCY) | _latency("lag", None, ("p99", "max"))
    return ({k: getattr(m, k) for k in COUNTS} | _latency("lat", m.latency, LATENCY)
            | _latency("lag", m.lag, ("p99", "max")))


def _auto_duration(r: StepResult) -> float | None:
    """A --duration auto step's measured window (it ran for that, not its maximum); else None."""
    measured = r.facts.of(Measured)
    if r.facts.of(AutoDuration) is None or measured is None:
        return None
    return measured.bench_seconds


def step_values(r: StepResult) -> dict[str, Any]:
    return {"step_id": r.step_id, "status": r.status, "reason": r.reason, "bench_start": r.bench_start,
            "bench_end": r.bench_end, "pgbench_exit": r.pgbench_exit, "tps_pgbench": r.summary.tps,
            "lat_avg_pgbench_ms": r.summary.lat_avg_ms, "conn_time_ms": r.summary.conn_time_ms, "tps_db": r.tps_db,
            # a step that stopped itself (--duration auto) ran for its measured window, not its maximum
            "duration_s": _auto_duration(r), **_measured(r.measurement)}


def script_rows(step_id: int, m: StepMeasurement) -> list[dict[str, Any]]:
    return [{"step_id": step_id, "script_no": s.script_no, "script": s.name, "weight": s.weight,
             "transactions": s.transactions, "failed": s.failed, "retried": s.retried, "tps": s.tps,
             **_latency("lat", s.latency, ("stddev", "p50", "p95", "p99", "max"))} for s in m.scripts]
