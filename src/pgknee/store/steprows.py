"""A step's result as the rows of `steps` and `step_scripts` (store/writer.py writes them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pgknee.model.facts import AutoDuration, Measured
from pgknee.model.results import LatencyStats, StepMeasurement, StepResult


def _latency(prefix: str, lat: LatencyStats | None, fields: Sequence[str]) -> dict[str, float | None]:
    return {f"{prefix}_{f}_ms": (getattr(lat, f"{f}_ms") if lat is not None else None) for f in fields}


def _auto_duration(r: StepResult) -> float | None:
    """A --duration auto step's measured window (it ran for that, not its maximum); else None."""
    measured = r.facts.of(Measured)
    return measured.bench_seconds if r.facts.of(AutoDuration) is not None and measured is not None else None


def step_values(r: StepResult) -> dict[str, Any]:
    m = r.measurement
    values: dict[str, Any] = {
        "step_id": r.step_id, "status": r.status, "reason": r.reason, "bench_start": r.bench_start,
        "bench_end": r.bench_end, "pgbench_exit": r.pgbench_exit, "tps_pgbench": r.summary.tps,
        "lat_avg_pgbench_ms": r.summary.lat_avg_ms, "conn_time_ms": r.summary.conn_time_ms, "tps_db": r.tps_db,
        "transactions": m.transactions if m else None, "failed": m.failed if m else None,
        "retried": m.retried if m else None, "retries": m.retries if m else None, "tps": m.tps if m else None,
        # a step that stopped itself (--duration auto) ran for its measured window, not its maximum
        "duration_s": _auto_duration(r)}
    lat = m.latency if m else None
    values.update(_latency("lat", lat, ("stddev", "min", "p50", "p95", "p99", "max")))
    values["lat_avg_ms"] = lat.mean_ms if lat else None
    lag = m.lag if m else None
    values.update(_latency("lag", lag, ("p99", "max")))
    values["lag_avg_ms"] = lag.mean_ms if lag else None
    return values


def script_rows(step_id: int, m: StepMeasurement) -> list[dict[str, Any]]:
    out = []
    for s in m.scripts:
        lat = s.latency
        out.append({"step_id": step_id, "script_no": s.script_no, "script": s.name, "weight": s.weight,
                    "transactions": s.transactions, "failed": s.failed, "retried": s.retried, "tps": s.tps,
                    "lat_avg_ms": lat.mean_ms if lat else None,
                    **_latency("lat", lat, ("stddev", "p50", "p95", "p99", "max"))})
    return out
