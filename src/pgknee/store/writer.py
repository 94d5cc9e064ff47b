"""The one place that writes run data: a run's row, its environment and commands, and each
step from its frozen StepResult. The statements are SQL files (store/sql); a step is written in
one transaction, so a step is in the store whole or not at all."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from pgknee.clock import now_iso
from pgknee.keys import StepFact
from pgknee.registry import start_time
from pgknee.store.db import Store
from pgknee.store.sql import load
from pgknee.types import LatencyStats, ProgressPoint, Row, StepMeasurement, StepResult


class RunWriter:
    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.db = store.db
        self.run_id = run_id
        self.recorded = False  # the run's row exists (created, or reopened for --extend)

    def _one(self, name: str, params: Mapping[str, Any]) -> None:
        self.db.execute(load(name), {"run_id": self.run_id, **params})

    def _many(self, name: str, rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> None:
        self.db.executemany(load(name), rows)

    # ---- the run ----------------------------------------------------------------------------
    def create_run(self, *, workload: str, target_kind: str, target_label: str, plan: dict[str, Any],
                   steps_planned: int) -> None:
        self._one("create_run", {"created_at": now_iso(), "workload": workload, "target_kind": target_kind,
                                 "target_label": target_label, "plan_json": json.dumps(plan, sort_keys=True),
                                 "steps_planned": steps_planned, "owner": owner()})
        self.recorded = True

    def extend_run(self, *, plan: dict[str, Any], more_steps: int) -> int:
        """Reopen the stored run for more steps (pgknee run --extend); returns its last seq."""
        self._one("extend_run", {"plan_json": json.dumps(plan, sort_keys=True), "more_steps": more_steps,
                                 "owner": owner()})
        self.recorded = True
        row = self.db.execute(load("last_seq"), {"run_id": self.run_id}).fetchone()
        return int(row[0]) if row else 0

    def finish_run(self, status: str, reason: str | None) -> None:
        """How the run ended; steps it left running are marked too (interrupted, or failed)."""
        self._one("end_unfinished_steps", {"status": "interrupted" if status == "interrupted" else "failed",
                                           "reason": reason})
        self._one("finish_run", {"status": status, "reason": reason, "finished_at": now_iso()})

    def set_environment(self, items: Mapping[str, object]) -> None:
        self._many("set_environment", [{"run_id": self.run_id, "key": k, "value": str(v)} for k, v in items.items()])

    def add_command(self, step_id: int | None, purpose: str, argv: Sequence[str]) -> None:
        self._one("add_command", {"step_id": step_id, "purpose": purpose, "argv_json": json.dumps(list(argv))})

    # ---- steps --------------------------------------------------------------------------------
    def begin_step(self, step: Mapping[str, Any]) -> int:
        """A step's row, 'running' (the columns of begin_step.sql but run_id and started_at)."""
        cur = self.db.execute(load("begin_step"), {"run_id": self.run_id, "started_at": now_iso(), **step})
        assert cur.lastrowid is not None
        return cur.lastrowid

    def fail_step(self, step_id: int, reason: str) -> None:
        self._one("fail_step", {"step_id": step_id, "reason": reason})

    def write_step(self, r: StepResult) -> None:
        with self.store.transaction():
            self._one("end_step", _step_values(r))
            if r.measurement is not None:
                self._many("insert_step_scripts", _script_rows(r.step_id, r.measurement))
                self._many("insert_step_failures", [{"step_id": r.step_id, "kind": k, "count": n}
                                                    for k, n in r.measurement.failures.items()])
            self._many("insert_pg_stat_database", [{"step_id": r.step_id, "name": k, "delta": v}
                                                   for k, v in r.pg_delta.items()])
            first: dict[float, ProgressPoint] = {}
            for p in r.progress:  # pgbench repeats a second's line now and then: the first one counts
                first.setdefault(p.t_s, p)
            self._many("insert_progress", [{"step_id": r.step_id, **asdict(p)} for p in first.values()])
            if r.activity is not None:
                self._many("insert_snapshots", self._rows(r.step_id, r.activity.snapshots))
                self._many("insert_activity", self._rows(r.step_id, r.activity.rows))
                self._many("insert_step_facts", [
                    {"step_id": r.step_id, "name": name, "value": float(n)}
                    for name, n in ((StepFact.ACTIVITY_TICKS_LOST, r.activity.ticks_lost),
                                    (StepFact.ACTIVITY_RECONNECTS, r.activity.reconnects)) if n])
            self._many("insert_os_samples", self._rows(r.step_id, r.os_rows))
            self._many("insert_step_facts", [{"step_id": r.step_id, "name": k, "value": v} for k, v in r.facts.items()])
            if r.pooler is not None:
                self._many("insert_pooler_samples", self._rows(r.step_id, r.pooler.samples))
                self._many("insert_step_pooler", [{"step_id": r.step_id, "name": k, "value": v}
                                                  for k, v in r.pooler.facts.items()])

    def write_activity(self, step_id: int, snapshots: Iterable[Row], rows: Iterable[Row]) -> None:
        """pg_stat_activity samples handed over while a step runs (collect.activity's sink)."""
        with self.store.transaction():
            self._many("insert_snapshots", self._rows(step_id, snapshots))
            self._many("insert_activity", self._rows(step_id, rows))

    def _rows(self, step_id: int, rows: Iterable[Row]) -> Iterable[Row]:
        return ((self.run_id, step_id, *row) for row in rows)


def owner() -> str:
    """Which pgknee writes a run: host, pid and the pid's start time (a later process with the
    same pid is not it)."""
    me = os.getpid()
    return f"{socket.gethostname()}:{me}:{start_time(me)}"


def _latency(prefix: str, lat: LatencyStats | None, fields: Sequence[str]) -> dict[str, float | None]:
    return {f"{prefix}_{f}_ms": (getattr(lat, f"{f}_ms") if lat is not None else None) for f in fields}


def _step_values(r: StepResult) -> dict[str, Any]:
    m = r.measurement
    values: dict[str, Any] = {
        "step_id": r.step_id, "status": r.status, "reason": r.reason, "bench_start": r.bench_start,
        "bench_end": r.bench_end, "pgbench_exit": r.pgbench_exit, "tps_pgbench": r.summary.tps,
        "lat_avg_pgbench_ms": r.summary.lat_avg_ms, "conn_time_ms": r.summary.conn_time_ms, "tps_db": r.tps_db,
        "transactions": m.transactions if m else None, "failed": m.failed if m else None,
        "retried": m.retried if m else None, "retries": m.retries if m else None, "tps": m.tps if m else None}
    lat = m.latency if m else None
    values.update(_latency("lat", lat, ("stddev", "min", "p50", "p95", "p99", "max")))
    values["lat_avg_ms"] = lat.mean_ms if lat else None
    lag = m.lag if m else None
    values.update(_latency("lag", lag, ("p99", "max")))
    values["lag_avg_ms"] = lag.mean_ms if lag else None
    return values


def _script_rows(step_id: int, m: StepMeasurement) -> list[dict[str, Any]]:
    out = []
    for s in m.scripts:
        lat = s.latency
        out.append({"step_id": step_id, "script_no": s.script_no, "script": s.name, "weight": s.weight,
                    "transactions": s.transactions, "failed": s.failed, "retried": s.retried, "tps": s.tps,
                    "lat_avg_ms": lat.mean_ms if lat else None,
                    **_latency("lat", lat, ("stddev", "p50", "p95", "p99", "max"))})
    return out
