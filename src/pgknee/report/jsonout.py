"""Machine-readable results (format-versioned)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any

from pgknee.analyze.compare import Ratio, comparison_rows, headlines
from pgknee.analyze.cpus import kcache_cpu, server_row
from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.resemblance import resemblance
from pgknee.analyze.run import RunListing
from pgknee.analyze.view import Group, MemoryRow, PoolerRow, RunView
from pgknee.analyze.waits import WaitProfile
from pgknee.model.results import RunData, StepRecord
from pgknee.model.samples import WaitSampling
from pgknee.report.jsonfields import fields_json, plain
from pgknee.report.serverside import group_server_json, step_server_json

FORMAT_VERSION = 2  # 2: the recommendation's interval is counts_interval alone, verdict 'peaks'


def run_json(view: RunView) -> dict[str, Any]:
    d = view.data
    steps = [_step_json(view, s) for s in d.steps]
    groups = [{
        "variant": g.variant, "clients": g.clients, "reps": len(g.done), "tps": plain(g.tps),
        "latency_ms": {"avg": plain(g.lat_avg), "stddev": plain(g.lat_stddev), "p50": plain(g.p50),
                       "p95": plain(g.p95), "p99": plain(g.p99), "max": plain(g.lat_max)},
        "noisy": g.noisy, "tps_spread_pct": g.tps_spread_pct, "noise_threshold_pct": g.noise_pct,
        "pooler": _row_json(g.pooler),
        "memory": _row_json(g.memory),
        "system": {k: getattr(g.system, k) for k in g.system.__dataclass_fields__},
        "server": server_json(d, g),
        "server_side": group_server_json(d, g.done),
        "checks": [{"rep": rep, "name": c.id, "status": c.status, "detail": c.detail, "value": c.value,
                    "unit": c.unit} for rep, cs in g.checks for c in cs],
    } for g in view.groups]
    r = d.run
    return {"format_version": FORMAT_VERSION, "run_id": r.run_id, "status": r.status,
            "status_reason": r.status_reason, "created_at": r.created_at, "finished_at": r.finished_at,
            "workload": r.workload, "target": {"kind": r.target_kind, "endpoint": r.target_label},
            "plan": json.loads(r.plan_json), "environment": d.env, "steps": steps, "summary": groups,
            "warnings": list(view.warnings), "replay_mix": _mix_json(view)}


def _step_json(view: RunView, s: StepRecord) -> dict[str, Any]:
    d = view.data
    return {
        "seq": s.seq, "variant": s.variant, "clients": s.clients, "rep": s.rep, "threads": s.threads,
        "protocol": s.protocol, "status": s.status, "status_reason": s.status_reason,
        "pipeline": bool(s.pipeline), "connect_per_txn": bool(s.connect_per_txn), "rate": s.rate,
        "think_ms": s.think_ms, "pooler_kind": s.pooler_kind, "pool_mode": s.pool_mode,
        "pool_size": s.pool_size, "idle": s.idle, "idle_kind": s.idle_kind,
        "settings": json.loads(s.settings_json) if s.settings_json else None,
        "rtt_ms": s.rtt_ms, "rtt_jitter_ms": s.rtt_jitter_ms,
        "facts": dict(d.facts[s.step_id].items()) if s.step_id in d.facts else {},
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
        "pg_stat_database_delta": dict(d.database(s.step_id).items()),
        "snapshots": view.step_snapshots(s),
        "wait_profile": [{"wait_event_type": w.wait_event_type, "wait_event": w.wait_event, "count": w.count,
                          "aas": w.aas} for w in view.step_waits(s)],
        "hidden_backends": d.hidden.get(s.step_id),
        "wait_sampling": _wait_sampling_json(d.of(s.step_id, WaitSampling)),
        "agents": [dataclasses.asdict(a) for a in d.agents.get(s.step_id, [])],
        "server_side": step_server_json(d, s),
    }


def _mix_json(view: RunView) -> dict[str, Any] | None:
    """A captured workload's replay against its capture, over all completed steps (shares 0..1)."""
    r = resemblance(*view.data.statement_mix)
    if r is None:
        return None
    return {"calls_tolerance": r.calls_tol, "time_tolerance": r.time_tol, "within": r.ok,
            "statements": [dataclasses.asdict(row) for row in r.rows]}


def server_json(data: RunData, g: Group) -> dict[str, Any] | None:
    """The server's own figures (its /proc's samples, pg_stat_kcache's CPU), when pgknee had them."""
    row, kc = server_row(data, g), kcache_cpu(data, g)
    if row is None and kc is None:
        return None
    return {"os": dataclasses.asdict(row) if row is not None else None,
            "kcache": {"cores_busy": kc[0], "system_pct": kc[1]} if kc is not None else None}


def _row_json(p: PoolerRow | MemoryRow | None) -> dict[str, Any] | None:
    """A group's pooler or memory row: its fields, Spreads as median/min/max/n."""
    if p is None:
        return None
    return fields_json(p)


def _ratio(r: Ratio | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"value": r.value, "lo95": r.lo, "hi95": r.hi, "pairs": r.pairs, "beyond_noise": r.beyond_noise}


def comparison_json(view: RunView) -> list[dict[str, Any]]:
    """The side-by-side rows: each variant per client count with its ratios to the first."""
    return [{
        "clients": row.group.clients, "variant": row.group.variant, "reps": len(row.group.done),
        "tps": plain(row.group.tps),
        "latency_ms": {"avg": plain(row.group.lat_avg), "stddev": plain(row.group.lat_stddev),
                       "p99": plain(row.group.p99)},
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


def runs_json(runs: Sequence[RunListing]) -> dict[str, Any]:
    """pgknee runs --json."""
    return {"format_version": FORMAT_VERSION, "runs": [
        {"run_id": x.run.run_id, "created_at": x.run.created_at, "finished_at": x.run.finished_at,
         "status": x.run.status, "owner_gone": x.gone, "silent_s": x.silent_s, "workload": x.run.workload,
         "target": {"kind": x.run.target_kind, "endpoint": x.run.target_label},
         "steps_completed": x.completed, "steps_planned": x.run.steps_planned,
         "best": None if x.best is None else {"tps": x.best.tps, "clients": x.best.clients,
                                              "variant": x.best.variant}} for x in runs]}


def waits_json(run_id: str, phases: Sequence[str], backend: str,
               profiles: Sequence[tuple[str, int, int, WaitProfile]]) -> dict[str, Any]:
    """pgknee waits --json: per (variant, clients), the steps' wait profile (AAS per event)."""
    return {"format_version": FORMAT_VERSION, "run": run_id, "phases": list(phases), "backend": backend,
            "profiles": [{"variant": variant, "clients": clients, "steps": steps, "snapshots": p.snapshots,
                          "total_aas": p.total_aas, "hidden_backends": p.hidden,
                          "events": [{"wait_event_type": w.wait_event_type, "wait_event": w.wait_event,
                                      "count": w.count, "aas": w.aas} for w in p.rows]}
                         for variant, clients, steps, p in profiles]}


def dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"


def _wait_sampling_json(w: WaitSampling | None) -> dict[str, Any] | None:
    """pg_wait_sampling's profile of the step (the benchmark's backends): AAS = count / probes."""
    if w is None or w.probes <= 0:
        return None
    return {"probes": w.probes, "probes_counted": w.probes_counted, "window_s": w.window_s,
            "probe_hz": w.probes / w.window_s if w.window_s > 0 else None, "backends": w.backends,
            "profile": [{"wait_event_type": t, "wait_event": e, "count": n, "aas": n / w.probes}
                        for t, e, n in w.counts]}
