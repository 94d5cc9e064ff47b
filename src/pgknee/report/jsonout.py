"""Machine-readable results (format-versioned)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any

from pgknee.analyze.compare import Ratio, comparison_rows, headlines
from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.records import MemoryRow, PoolerRow, RunView, Spread
from pgknee.analyze.resemblance import resemblance

FORMAT_VERSION = 1


def _spread(f: Spread | None) -> dict[str, float] | None:
    return None if f is None else {"median": f.value, "min": f.lo, "max": f.hi, "n": f.n}


def run_json(view: RunView) -> dict[str, Any]:
    d = view.data
    steps = []
    for s in d.steps:
        steps.append({
            "seq": s.seq, "variant": s.variant, "clients": s.clients, "rep": s.rep, "threads": s.threads,
            "protocol": s.protocol, "status": s.status, "status_reason": s.status_reason,
            "pipeline": bool(s.pipeline), "connect_per_txn": bool(s.connect_per_txn), "rate": s.rate,
            "think_ms": s.think_ms, "pooler_kind": s.pooler_kind, "pool_mode": s.pool_mode,
            "pool_size": s.pool_size, "idle": s.idle, "idle_kind": s.idle_kind,
            "settings": json.loads(s.settings_json) if s.settings_json else None,
            "facts": d.facts.get(s.step_id, {}),
            "duration_s": s.duration_s, "tps": s.tps, "tps_pgbench": s.tps_pgbench, "tps_db": s.tps_db,
            "transactions": s.transactions, "failed": s.failed, "retried": s.retried, "retries": s.retries,
            "latency_ms": {"avg": s.lat_avg_ms, "stddev": s.lat_stddev_ms, "min": s.lat_min_ms, "p50": s.lat_p50_ms,
                           "p95": s.lat_p95_ms, "p99": s.lat_p99_ms, "max": s.lat_max_ms},
            "schedule_lag_ms": None if s.lag_avg_ms is None else {"avg": s.lag_avg_ms, "p99": s.lag_p99_ms,
                                                                  "max": s.lag_max_ms},
            "scripts": [{"script": r.script, "weight": r.weight, "transactions": r.transactions, "failed": r.failed,
                         "retried": r.retried, "tps": r.tps,
                         "latency_ms": {"avg": r.lat_avg_ms, "stddev": r.lat_stddev_ms, "p50": r.lat_p50_ms,
                                        "p95": r.lat_p95_ms, "p99": r.lat_p99_ms, "max": r.lat_max_ms}}
                        for r in d.scripts.get(s.step_id, [])],
            "pg_stat_database_delta": d.pgdb.get(s.step_id, {}),
            "snapshots": view.step_snapshots(s),
            "wait_profile": [{"wait_event_type": w.wait_event_type, "wait_event": w.wait_event, "count": w.count,
                              "aas": w.aas} for w in view.step_waits(s)],
        })
    groups = [{
        "variant": g.variant, "clients": g.clients, "reps": len(g.done), "tps": _spread(g.tps),
        "latency_ms": {"avg": _spread(g.lat_avg), "stddev": _spread(g.lat_stddev), "p50": _spread(g.p50),
                       "p95": _spread(g.p95), "p99": _spread(g.p99), "max": _spread(g.lat_max)},
        "noisy": g.noisy, "tps_spread_pct": g.tps_spread_pct, "noise_threshold_pct": g.noise_pct,
        "pooler": _row_json(g.pooler),
        "memory": _row_json(g.memory),
        "system": {k: getattr(g.system, k) for k in g.system.__dataclass_fields__},
        "checks": [{"rep": rep, "name": c.id, "status": c.status, "detail": c.detail, "value": c.value,
                    "unit": c.unit} for rep, cs in g.checks for c in cs],
    } for g in view.groups]
    r = d.run
    return {"format_version": FORMAT_VERSION, "run_id": r.run_id, "status": r.status,
            "status_reason": r.status_reason, "created_at": r.created_at, "finished_at": r.finished_at,
            "workload": r.workload, "target": {"kind": r.target_kind, "endpoint": r.target_label},
            "plan": json.loads(r.plan_json), "environment": d.env, "steps": steps, "summary": groups,
            "warnings": list(view.warnings), "replay_mix": _mix_json(view)}


def _mix_json(view: RunView) -> dict[str, Any] | None:
    """A captured workload's replay against its capture, over all completed steps (shares 0..1)."""
    r = resemblance(*view.data.statement_mix)
    if r is None:
        return None
    return {"calls_tolerance": r.calls_tol, "time_tolerance": r.time_tol, "within": r.ok,
            "statements": [dataclasses.asdict(row) for row in r.rows]}


def _row_json(p: PoolerRow | MemoryRow | None) -> dict[str, Any] | None:
    """A group's pooler or memory row: its fields, Spreads as median/min/max/n."""
    if p is None:
        return None
    return {f.name: _spread(v) if isinstance(v := getattr(p, f.name), Spread) else v for f in dataclasses.fields(p)}


def _ratio(r: Ratio | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"value": r.value, "lo95": r.lo, "hi95": r.hi, "pairs": r.pairs, "beyond_noise": r.beyond_noise}


def comparison_json(view: RunView) -> list[dict[str, Any]]:
    """The side-by-side rows: each variant per client count with its ratios to the first."""
    return [{
        "clients": row.group.clients, "variant": row.group.variant, "reps": len(row.group.done),
        "tps": _spread(row.group.tps),
        "latency_ms": {"avg": _spread(row.group.lat_avg), "stddev": _spread(row.group.lat_stddev),
                       "p99": _spread(row.group.p99)},
        "noisy": row.group.noisy, "versus": row.base if row.tps_ratio is not None else None,
        "tps_ratio": _ratio(row.tps_ratio), "latency_ratio": _ratio(row.latency_ratio),
        "pooler": _row_json(row.group.pooler),
    } for row in comparison_rows(view)]


def compare_json(views: Sequence[RunView], view: RunView, diffs: Sequence[str]) -> dict[str, Any]:
    """pgknee compare --json: the runs, the side-by-side rows, the headlines, what differs."""
    return {"format_version": FORMAT_VERSION, "runs": [v.data.run.run_id for v in views], "summary": view.summary,
            "rows": comparison_json(view), "headlines": headlines(view), "metadata_differences": list(diffs),
            "plans": [json.loads(v.data.run.plan_json) for v in views]}


def recommendations_json(view: RunView, recs: Sequence[Recommendation]) -> dict[str, Any]:
    """pgknee recommend --json."""
    return {"format_version": FORMAT_VERSION, "run": view.data.run.run_id,
            "recommendations": [recommendation_json(r) for r in recs]}


def recommendation_json(r: Recommendation) -> dict[str, Any]:
    f = r.fit
    d = {k: v for k, v in dataclasses.asdict(r).items() if k != "fit"}
    d["headline"] = r.headline()
    if f is not None:
        def num(x: float) -> float | None:
            return None if math.isinf(x) or math.isnan(x) else x

        d["model"] = {"lambda": f.params.lam, "sigma": f.params.sigma, "kappa": f.params.kappa,
                      "sigma_interval": [f.sigma.lo, f.sigma.hi], "kappa_interval": [f.kappa.lo, f.kappa.hi],
                      "peak_n": num(f.params.peak_n), "peak_n_interval": [num(f.peak_n.lo), num(f.peak_n.hi)],
                      "peak_tps": num(f.params.peak_x), "peak_tps_interval": [num(f.peak_x.lo), num(f.peak_x.hi)],
                      "r2": f.r2, "identified": f.identified, "points": f.points, "bootstrap": f.method,
                      "bootstrap_draws": f.draws}
    return d


def dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"
